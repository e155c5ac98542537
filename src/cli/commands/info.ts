import type { Command } from "commander";
import { formatTable } from "../../team/text-table.js";
import { backendOption, formatFlagErrors } from "../options.js";

interface InfoFlags {
  backend?: "llama-cpp" | "webgpu";
  json?: boolean;
}

/** Registers `kiln info`: what a backend finds on this machine (for webgpu: the adapter, its tier and limits). */
export function registerInfo(program: Command): void {
  const command = program
    .command("info")
    .description("show what a backend finds on this machine: llama.cpp's GPU support, or the WebGPU adapter, tier and limits")
    .addOption(backendOption().default("llama-cpp"))
    .option("--json", "print JSON")
    .addHelpText("after", "\nExamples:\n  kiln info\n  kiln info --backend webgpu --json\n")
    .action(async (flags: InfoFlags) => {
      const { describeBackend } = await import("../../engine/index.js");
      const facts = await describeBackend(flags.backend ?? "llama-cpp");
      process.stdout.write(`${flags.json ? JSON.stringify(facts, null, 2) : formatFacts(facts)}\n`);
    });
  formatFlagErrors(command);
}

/** Scalars as a two-column table; lists and objects (features, limits) one entry per line below it. */
function formatFacts(facts: Record<string, unknown>): string {
  const rows = Object.entries(facts).filter(([, value]) => typeof value !== "object").map(([key, value]) => [key, String(value)]);
  const nested = Object.entries(facts).filter(([, value]) => typeof value === "object" && value !== null);
  const sections = nested.map(([key, value]) => {
    const entries = Array.isArray(value) ? value.map((item) => `  ${String(item)}`) : Object.entries(value as object).map(([k, v]) => `  ${k}: ${String(v)}`);
    return [`${key}:`, ...entries].join("\n");
  });
  return [formatTable(["fact", "value"], rows), ...sections].join("\n\n");
}
