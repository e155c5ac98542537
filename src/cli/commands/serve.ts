import { InvalidArgumentError, type Command } from "commander";
import { UsageError } from "../report-error.js";
import { collectValues, formatFlagErrors, parseNumberIn, type ModelFlags } from "../options.js";

/** Flags of `kiln serve`, as commander parses them. */
export interface ServeFlags extends Omit<ModelFlags, "model"> {
  host: string;
  port: number;
  model?: string[];
  apiKey?: string[];
  /** False with --no-auth. */
  auth: boolean;
  parallel?: number;
  queue?: number;
  maxOutputTokens?: number;
  logLevel: "error" | "info" | "debug";
  /** False with --no-prefix-cache. */
  prefixCache: boolean;
}

const LOOPBACK = new Set(["127.0.0.1", "localhost", "::1", "[::1]"]);

/** Registers `kiln serve`: the Anthropic Messages and OpenAI-compatible APIs over HTTP. */
export function registerServe(program: Command): void {
  const command = program
    .command("serve")
    .description("serve models over HTTP as the Anthropic Messages API and an OpenAI-compatible API")
    .option("--host <address>", "address to listen on", "127.0.0.1")
    .option("--port <n>", "port to listen on (0 = any free port)", parseNumberIn(0, 65535, true), 5456);
  // Not addModelOptions: serve's --model is repeatable (the first is the default).
  command
    .option("--threads <n>", "CPU threads for generation (default: all cores)", parseNumberIn(1, 1024, true))
    .option("--ctx-size <n>", "context size per sequence in tokens (default: the model's, capped)", parseNumberIn(256, 1_048_576, true))
    .option("-m, --model <ref>", "model to serve (repeatable; default: the default model)", collectValues)
    .option("--api-key <key>", "accept this API key (repeatable; also KILN_API_KEY, comma-separated)", collectValues)
    .option("--no-auth", "serve without API keys even on a non-loopback address")
    .option("--parallel <n>", "requests decoded at once per model (default 4)", parseNumberIn(1, 256, true))
    .option("--queue <n>", "requests that may wait per model before new ones are refused (default 64)", parseNumberIn(0, 100_000, true))
    .option("--max-output-tokens <n>", "cap on generated tokens per request, whatever the client asks", parseNumberIn(1, 1_048_576, true))
    .option("--log-level <level>", "error | info (one line per request) | debug", parseLogLevel, "info")
    .option("--no-prefix-cache", "evaluate every prompt in full instead of reusing cached prefixes (for comparisons)")
    .addHelpText("after", [
      "",
      "Clients:",
      "  Claude Code / Anthropic SDKs:  ANTHROPIC_BASE_URL=http://127.0.0.1:5456  ANTHROPIC_AUTH_TOKEN=<key>",
      "  OpenAI SDKs and tools:         base URL http://127.0.0.1:5456/v1  with the same key",
    ].join("\n"))
    .action(async (flags: ServeFlags) => {
      await serve(flags);
    });
  formatFlagErrors(command);
}

function parseLogLevel(value: string): ServeFlags["logLevel"] {
  if (value === "error" || value === "info" || value === "debug") return value;
  throw new InvalidArgumentError("expected error, info or debug");
}

/** The keys to accept: --api-key values then KILN_API_KEY (comma-separated); none with --no-auth. */
export function collectApiKeys(flags: Pick<ServeFlags, "apiKey" | "auth">, env = process.env): string[] {
  if (!flags.auth) return [];
  const fromEnv = (env.KILN_API_KEY ?? "").split(",").map((key) => key.trim()).filter(Boolean);
  return [...new Set([...(flags.apiKey ?? []), ...fromEnv])];
}

async function serve(flags: ServeFlags): Promise<void> {
  const apiKeys = collectApiKeys(flags);
  if (!LOOPBACK.has(flags.host) && apiKeys.length === 0 && flags.auth) {
    throw new UsageError(`refusing to serve on ${flags.host} without an API key`, "pass --api-key <key> (or set KILN_API_KEY), or --no-auth to serve without authentication");
  }
  const { createServer } = await import("../../server/app.js");
  const log = (line: string) => process.stderr.write(`${line}\n`);
  const engine = openEngine(flags, log);
  const server = await createServer(engine, {
    apiKeys,
    maxOutputTokens: flags.maxOutputTokens,
    onResponse: flags.logLevel === "error" ? undefined : (r) => log(`${r.method} ${r.route} ${r.status} ${r.durationMs}ms key=${r.keyId}${r.model ? ` model=${r.model}` : ""}${r.outputTokens !== undefined ? ` in=${r.inputTokens} cached=${r.cachedInputTokens} out=${r.outputTokens}` : ""} ${r.requestId}`),
  }).listen({ host: flags.host, port: flags.port });
  log(`kiln listening on ${server.url} (loading models…)`);
  let ready;
  try {
    ready = await engine;
  } catch (error) {
    await server.close();
    throw error;
  }
  printReady(server.url, ready.listModels(), apiKeys.length, log);
  await waitForSignal();
  log("kiln: shutting down");
  await server.close();
  await ready.close();
}

async function openEngine(flags: ServeFlags, log: (line: string) => void) {
  const { resolveModel, parseModelRef, createProgressRenderer, DEFAULT_MODEL } = await import("../../models/index.js");
  const refs = flags.model?.length ? flags.model : [DEFAULT_MODEL];
  const models = [];
  for (const ref of refs) {
    const renderer = createProgressRenderer(process.stderr);
    try {
      models.push({ id: parseModelRef(ref).name, path: await resolveModel(ref, { onProgress: (p) => renderer.update(p) }) });
    } finally {
      renderer.finish();
    }
  }
  const { createEngine } = await import("../../engine/index.js");
  return createEngine({
    models,
    parallel: flags.parallel, queue: flags.queue, ctxSize: flags.ctxSize, threads: flags.threads,
    prefixCache: flags.prefixCache,
    // debug: show where each prompt stopped matching the cache (why a request re-evaluated its prefix).
    onPrefixDivergence: flags.logLevel === "debug" ? (model, info) => log(`prefix cache ${model}: ${JSON.stringify(info)}`) : undefined,
  });
}

interface ServedModel { id: string; contextSize: number; details?: Record<string, unknown> }

function printReady(url: string, models: ServedModel[], keys: number, log: (line: string) => void): void {
  for (const [i, model] of models.entries()) {
    const details = model.details ?? {};
    const parallel = typeof details.parallel === "number" ? ` × ${details.parallel} parallel` : "";
    log(`model ${model.id}${i === 0 ? " (default)" : ""}: context ${model.contextSize} tokens${parallel}, file ${formatBytes(details.fileSize)}, context memory ${formatBytes(details.contextMemory)}`);
  }
  log(`Anthropic base URL: ${url}     (ANTHROPIC_BASE_URL)`);
  log(`OpenAI base URL:    ${url}/v1  (OPENAI_BASE_URL)`);
  log(keys > 0 ? `auth: ${keys} API key${keys > 1 ? "s" : ""} (x-api-key or Authorization: Bearer)` : "auth: off (any key is accepted)");
}

function formatBytes(value: unknown): string {
  const bytes = typeof value === "number" ? value : typeof value === "object" && value && "total" in value ? Number((value as { total: unknown }).total) : NaN;
  if (!Number.isFinite(bytes)) return "unknown";
  return bytes >= 1024 ** 3 ? `${(bytes / 1024 ** 3).toFixed(1)} GiB` : `${Math.round(bytes / 1024 ** 2)} MiB`;
}

function waitForSignal(): Promise<void> {
  return new Promise((resolve) => {
    const stop = () => {
      process.off("SIGINT", stop);
      process.off("SIGTERM", stop);
      resolve();
    };
    process.once("SIGINT", stop);
    process.once("SIGTERM", stop);
  });
}
