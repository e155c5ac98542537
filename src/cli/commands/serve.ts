import { InvalidArgumentError, type Command } from "commander";
import { DEFAULT_KEEP_ALIVE_MS, defaultMemoryBudget, type Engine } from "../../engine/index.js";
import type { ListeningServer } from "../../server/app.js";
import type { ServerFeatures } from "../../server/context.js";
import { DEFAULT_INPUT_LIMITS, type InputLimits } from "../../server/input-limits.js";
import { DEFAULT_BODY_LIMIT } from "../../server/read-json-body.js";
import type { TeamFeatures } from "../../team/team-features.js";
import { LOG_LEVELS, type LogLevel } from "../../team/request-logger.js";
import { UsageError } from "../report-error.js";
import {
  addDraftOptions, backendOption, collectValues, CTX_SIZE_HELP, formatFlagErrors, gpuLayersOption, gpuOption, parseNumberIn, parseSize, type ModelFlags,
} from "../options.js";
import { parseModelFlags, readConfigFile, type ConfigFile, type ModelDeclaration } from "../serve-config.js";
import { addResidencyOptions, describeResidency, resolveResidency, type ResidencyFlags, type ResidencySettings } from "../residency-options.js";
import type { ServeModelSettings } from "../serve-engine.js";

/** Flags of `kiln serve`, as commander parses them (file settings fill what the flags leave unset). */
export interface ServeFlags extends Omit<ModelFlags, "model">, ResidencyFlags {
  host?: string;
  port?: number;
  model?: string[];
  apiKey?: string[];
  /** False with --no-auth. */
  auth: boolean;
  parallel?: number;
  queue?: number;
  maxOutputTokens?: number;
  /** Request caps: messages, content blocks, body size in MB. */
  maxMessages?: number;
  maxBlocks?: number;
  maxBody?: number;
  logLevel?: LogLevel;
  /** Log prompts and outputs with each request. */
  logBodies?: boolean;
  /** False with --no-prefix-cache. */
  prefixCache: boolean;
  /** Bytes the prefix cache may keep on disk (0: RAM only). */
  cacheDisk?: number;
  /** False with --no-prefill-lane. */
  prefillLane: boolean;
  config?: string;
  /** Seconds in-flight requests may take to finish after SIGINT/SIGTERM. */
  drainTimeout: number;
}

/** `kiln serve` settings once the config file and the flags are merged (flags win). */
interface ServeSettings extends ResidencySettings, ServeModelSettings {
  host: string;
  port: number;
  apiKeys: string[];
  auth: boolean;
  maxOutputTokens?: number;
  inputLimits: InputLimits;
  maxBodyBytes: number;
  logLevel: LogLevel;
  logBodies: boolean;
  prefixCache: boolean;
  cacheDiskBytes: number;
  cacheMinTokens?: number;
  prefillLane: boolean;
  drainTimeout: number;
  models: ModelDeclaration[];
  draftModel?: string;
  draftMax?: number;
}

/** The prefix cache's default disk budget. */
const DEFAULT_CACHE_DISK = 8 * 1024 ** 3;

const LOOPBACK = new Set(["127.0.0.1", "localhost", "::1", "[::1]"]);

/** Registers `kiln serve`: the Anthropic Messages and OpenAI-compatible APIs over HTTP. */
export function registerServe(program: Command): void {
  const command = program
    .command("serve")
    .description("serve models over HTTP as the Anthropic Messages API and an OpenAI-compatible API")
    .option("--config <file>", "read settings and models from a JSON file (flags override it)")
    .option("--host <address>", "address to listen on (default 127.0.0.1)")
    .option("--port <n>", "port to listen on (0 = any free port; default 5456)", parseNumberIn(0, 65535, true));
  // Not addModelOptions: serve's --model is repeatable (the first is the default).
  command
    .option("--threads <n>", "CPU threads for generation (default: all cores)", parseNumberIn(1, 1024, true))
    .option("--ctx-size <n>", CTX_SIZE_HELP, parseNumberIn(256, 1_048_576, true))
    .addOption(backendOption())
    .addOption(gpuOption())
    .addOption(gpuLayersOption())
    .option("-m, --model <ref>", "model to serve (repeatable; the first is the default): <ref>, <name>=<ref>, or <name>=openai+http://host:port/v1 for a remote replica (repeat the name for more replicas)", collectValues);
  addDraftOptions(command)
    .option("--api-key <key>", "accept this API key (repeatable; also KILN_API_KEY, comma-separated); keys from `kiln keys create` are always accepted", collectValues)
    .option("--no-auth", "serve without API keys, even on a non-loopback address and even when stored keys exist")
    .option("--parallel <n>", "requests decoded at once per model (default 4)", parseNumberIn(1, 256, true))
    .option("--queue <n>", "requests that may wait per model before new ones are refused (default 64)", parseNumberIn(0, 100_000, true))
    .option("--max-output-tokens <n>", "cap on generated tokens per request, whatever the client asks", parseNumberIn(1, 1_048_576, true))
    .option("--max-messages <n>", `messages per request; more are refused with a 400 before any work (default ${DEFAULT_INPUT_LIMITS.maxMessages})`, parseNumberIn(1, 10_000_000, true))
    .option("--max-blocks <n>", `content blocks (message parts and tools) per request (default ${DEFAULT_INPUT_LIMITS.maxBlocks})`, parseNumberIn(1, 10_000_000, true))
    .option("--max-body <MB>", `request body size in MB; larger bodies get a 413 (default ${DEFAULT_BODY_LIMIT / 1024 / 1024})`, parseNumberIn(1, 4096, true))
    .option("--log-level <level>", `${LOG_LEVELS.join(" | ")} (info: one line per request; default info)`, parseLogLevel)
    .option("--log-bodies", "log prompts and outputs with each request (off by default: they may be private)")
    .option("--drain-timeout <seconds>", "on SIGINT/SIGTERM, how long in-flight requests may take to finish", parseNumberIn(0, 86_400, false), 30)
    .option("--no-prefix-cache", "evaluate every prompt in full instead of reusing cached prefixes, in RAM or on disk (for comparisons)")
    .option("--cache-disk <size>", "disk space for saved prompt prefixes under $KILN_HOME/cache, least recently used dropped first (0 = RAM only; default 8G)", parseSize)
    .option("--no-prefill-lane", "evaluate long prompts inside the running streams' decode steps instead of in a second context beside them (saves that context's memory, one more --ctx-size of KV cache, but streams slow down while a long prompt is read)")
    .addHelpText("after", [
      "",
      "Clients:",
      "  Claude Code / Anthropic SDKs:  ANTHROPIC_BASE_URL=http://127.0.0.1:5456  ANTHROPIC_AUTH_TOKEN=<key>",
      "  OpenAI SDKs and tools:         base URL http://127.0.0.1:5456/v1  with the same key",
      "",
      "Stopping: SIGINT/SIGTERM stops accepting, lets requests finish (--drain-timeout), saves usage and exits;",
      "a second signal exits at once.",
    ].join("\n"))
    .action(async (flags: ServeFlags) => {
      await serve(flags);
    });
  addResidencyOptions(command);
  formatFlagErrors(command);
}

function parseLogLevel(value: string): LogLevel {
  if ((LOG_LEVELS as readonly string[]).includes(value)) return value as LogLevel;
  throw new InvalidArgumentError(`expected one of ${LOG_LEVELS.join(", ")}`);
}

/** The keys to accept: --api-key values, the config file's, then KILN_API_KEY (comma-separated); none with --no-auth. */
export function collectApiKeys(flags: Pick<ServeFlags, "apiKey" | "auth">, env = process.env, fromFile: string[] = []): string[] {
  if (!flags.auth) return [];
  const fromEnv = (env.KILN_API_KEY ?? "").split(",").map((key) => key.trim()).filter(Boolean);
  return [...new Set([...(flags.apiKey ?? []), ...fromFile, ...fromEnv])];
}

/** Merges the config file (when given) under the flags. */
export function resolveSettings(flags: ServeFlags, env = process.env): ServeSettings {
  const file: Partial<ConfigFile> & { declarations: ModelDeclaration[] } = flags.config ? readConfigFile(flags.config, env) : { declarations: [] };
  const auth = flags.auth && !file.noAuth;
  return {
    host: flags.host ?? file.host ?? "127.0.0.1",
    port: flags.port ?? file.port ?? 5456,
    apiKeys: collectApiKeys({ apiKey: flags.apiKey, auth }, env, file.apiKeys),
    auth,
    parallel: flags.parallel ?? file.parallel,
    queue: flags.queue ?? file.queue,
    ctxSize: flags.ctxSize ?? file.ctxSize,
    threads: flags.threads ?? file.threads,
    backend: flags.backend ?? file.backend,
    gpu: flags.gpu ?? file.gpu,
    gpuLayers: flags.gpuLayers ?? file.gpuLayers,
    maxOutputTokens: flags.maxOutputTokens ?? file.maxOutputTokens,
    inputLimits: { maxMessages: flags.maxMessages ?? DEFAULT_INPUT_LIMITS.maxMessages, maxBlocks: flags.maxBlocks ?? DEFAULT_INPUT_LIMITS.maxBlocks },
    maxBodyBytes: flags.maxBody ? flags.maxBody * 1024 * 1024 : DEFAULT_BODY_LIMIT,
    logLevel: flags.logLevel ?? file.logLevel ?? "info",
    logBodies: flags.logBodies ?? false,
    prefixCache: flags.prefixCache,
    cacheDiskBytes: flags.cacheDisk ?? file.cacheDisk ?? DEFAULT_CACHE_DISK,
    cacheMinTokens: file.cacheMinTokens,
    prefillLane: flags.prefillLane && (file.prefillLane ?? true),
    drainTimeout: flags.drainTimeout,
    models: flags.model?.length ? parseModelFlags(flags.model) : file.declarations,
    ...resolveResidency(flags, file),
    draftModel: flags.draftModel,
    draftMax: flags.draftMax,
  };
}

async function serve(flags: ServeFlags): Promise<void> {
  const settings = resolveSettings(flags);
  const log = (line: string) => void process.stderr.write(`${line}\n`);
  const { createTeamFeatures } = await import("../../team/team-features.js");
  const { kilnHome } = await import("../../models/index.js");
  const features = createTeamFeatures({ home: kilnHome(), logLevel: settings.logLevel, logBodies: settings.logBodies });
  if (!LOOPBACK.has(settings.host) && settings.auth && settings.apiKeys.length === 0 && !features.hasLiveKeys()) {
    await features.close();
    throw new UsageError(`refusing to serve on ${settings.host} without an API key`, "pass --api-key <key> (or set KILN_API_KEY, or create one with `kiln keys create`), or --no-auth to serve without authentication");
  }
  const stop = watchSignals(log);
  const { createServer } = await import("../../server/app.js");
  const { openServeEngine } = await import("../serve-engine.js");
  const engine = openServeEngine(settings, { log, onModelLoad: (id, ms) => features.observeModelLoad(id, ms) });
  const server = await createServer(engine, {
    apiKeys: settings.apiKeys,
    maxOutputTokens: settings.maxOutputTokens,
    inputLimits: settings.inputLimits,
    maxBodyBytes: settings.maxBodyBytes,
    features: serverFeatures(features, settings),
  }).listen({ host: settings.host, port: settings.port });
  log(`kiln listening on ${server.url} (loading models…)`);
  const ready = await Promise.race([engine, stop.then(() => undefined)]).catch(async (error: unknown) => {
    await server.close();
    await features.close();
    throw error;
  });
  if (!ready) {
    // Stopped while loading: nothing is in flight; unload whatever finishes loading.
    await server.close();
    await features.close();
    await engine.then((loaded) => loaded.close(), () => undefined);
    return;
  }
  printReady(server.url, ready, settings, features.hasStoredKeys(), log);
  await stop;
  await shutDown(server, features, ready, settings.drainTimeout, log);
}

/**
 * The features the HTTP core sees. Stored keys are enforced as soon as one exists (checked per request, so a key
 * created while the server runs counts at once) and stay enforced when all are revoked or expired, so revoking
 * the last key locks the server rather than opening it; never with --no-auth.
 */
function serverFeatures(features: TeamFeatures, settings: ServeSettings): ServerFeatures {
  if (!settings.auth) return { ...features, keys: undefined };
  return { ...features, keysEnforced: () => features.hasStoredKeys() };
}

async function shutDown(server: ListeningServer, features: TeamFeatures, engine: Engine, drainSeconds: number, log: (line: string) => void): Promise<void> {
  const drained = server.drain(drainSeconds * 1000);
  // Logged once the port is closed, so whoever reads it knows new connections are refused.
  log(`kiln: draining (up to ${drainSeconds}s for requests in flight; a second signal stops at once)`);
  const { timedOut } = await drained;
  if (timedOut) log("kiln: drain timeout reached; closed the remaining connections");
  await features.close();
  await engine.close();
  log("kiln: stopped");
}

/** Resolves on the first SIGINT/SIGTERM; a second one exits at once with 130. */
function watchSignals(log: (line: string) => void): Promise<void> {
  return new Promise((resolve) => {
    let seen = false;
    const onSignal = () => {
      if (seen) {
        log("kiln: second signal, exiting now");
        process.exit(130);
      }
      seen = true;
      resolve();
    };
    process.on("SIGINT", onSignal);
    process.on("SIGTERM", onSignal);
  });
}

function printReady(url: string, engine: Engine, settings: ServeSettings, storedKeys: boolean, log: (line: string) => void): void {
  // The models loaded at start; the others of the store load on demand.
  for (const [i, model] of engine.listModels().filter((m) => m.details?.loaded !== false).entries()) {
    const details = model.details ?? {};
    const name = `model ${model.id}${i === 0 ? " (default)" : ""}${model.aliases.length ? ` (also ${model.aliases.join(", ")})` : ""}`;
    if (model.backend === "remote") {
      const replicas = Array.isArray(details.replicas) ? (details.replicas as { url: string }[]).map((r) => r.url) : [];
      const upstream = details.upstreamModel !== model.id ? `, upstream model ${String(details.upstreamModel)}${details.upstreamModelPicked ? " (the only model the upstream serves)" : ""}` : "";
      log(`${name}: remote, context ${model.contextSize} tokens${upstream}, replicas ${replicas.join(", ")}`);
      continue;
    }
    const lane = details.prefillLane === true ? ", prefill lane" : "";
    const cpu = typeof details.cpuThreading === "string" ? `, CPU threads ${details.threads} (${details.cpuThreading}${lane})` : "";
    if (typeof details.placement === "string") {
      // llama.cpp: where the layers and the KV cache went, and the context (and why that size when not asked for).
      const why = CONTEXT_SOURCES[String(details.contextSizeSource)] ?? "";
      // Quantized KV cache types, with what f16 would take, and flash attention where it was set on or off.
      const kv = (typeof details.kvCacheTypes === "string" && details.kvCacheTypes !== "f16/f16"
        ? `, KV cache types ${details.kvCacheTypes} (${formatBytes(details.kvCacheBytes)}; f16 would take ${formatBytes(details.kvCacheF16Bytes)})` : "")
        + (typeof details.flashAttention === "boolean" ? `, flash attention ${details.flashAttention ? "on" : "off"}` : "");
      log(`${name}: ${details.placement}${why}${kv}, file ${formatBytes(details.fileSize)}${cpu}`);
      continue;
    }
    const parallel = typeof details.parallel === "number" ? ` × ${details.parallel} parallel` : "";
    // WebGPU: its KV cache within the context memory, and the adapter it all sits on.
    const kv = typeof details.kvCacheBytes === "number" ? ` (KV cache ${formatBytes(details.kvCacheBytes)})` : "";
    const adapter = typeof details.adapter === "string" ? ` on ${details.adapter} (${String(details.gpuBackend)})` : "";
    log(`${name}: context ${model.contextSize} tokens${parallel}, file ${formatBytes(details.fileSize)}, context memory ${formatBytes(details.contextMemory)}${kv}${adapter}${cpu}`);
  }
  log(describeResidency(settings, DEFAULT_KEEP_ALIVE_MS, defaultMemoryBudget()));
  log(`Anthropic base URL: ${url}     (ANTHROPIC_BASE_URL)`);
  log(`OpenAI base URL:    ${url}/v1  (OPENAI_BASE_URL)`);
  log(!settings.prefixCache ? "prefix cache: off" : settings.cacheDiskBytes > 0
    ? `prefix cache: RAM and disk (up to ${formatBytes(settings.cacheDiskBytes)} under $KILN_HOME/cache)` : "prefix cache: RAM only");
  log(describeAuth(settings, storedKeys));
}

/** Why a default context has its size, after "context N × P" in the start-up line. */
const CONTEXT_SOURCES: Record<string, string> = {
  train: " (the model's own)",
  "cpu-cap": " (the CPU default's cap)",
  memory: " (what fits in memory)",
};

function describeAuth(settings: ServeSettings, storedKeys: boolean): string {
  if (!settings.auth) return "auth: off (--no-auth; any key is accepted)";
  const keys = settings.apiKeys.length;
  const parts = [...(keys > 0 ? [`${keys} API key${keys > 1 ? "s" : ""}`] : []), ...(storedKeys ? ["stored keys"] : [])];
  if (parts.length > 0) return `auth: ${parts.join(" + ")} (x-api-key or Authorization: Bearer)`;
  return "auth: off until a key is created with `kiln keys create` (any key is accepted)";
}

function formatBytes(value: unknown): string {
  const bytes = typeof value === "number" ? value : NaN;
  if (!Number.isFinite(bytes)) return "unknown";
  return bytes >= 1024 ** 3 ? `${(bytes / 1024 ** 3).toFixed(1)} GiB` : `${Math.round(bytes / 1024 ** 2)} MiB`;
}
