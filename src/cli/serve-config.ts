/**
 * `kiln serve` configuration: a JSON file (`--config kiln.json`) holding what the flags hold plus model
 * declarations with their backends; flags override the file. A bad file is one clear error naming the key.
 */
import { readFileSync } from "node:fs";
import * as v from "valibot";
import { GPU_FLAG_VALUES, toBytes } from "./options.js";
import { RESIDENCY_CONFIG } from "./residency-options.js";
import { UsageError } from "./report-error.js";

const RemoteModel = v.strictObject({
  name: v.pipe(v.string(), v.minLength(1)),
  backend: v.literal("openai"),
  /** Base URLs of the replicas, each ending in its API prefix (…/v1). */
  upstreams: v.pipe(v.array(v.pipe(v.string(), v.url())), v.minLength(1)),
  /** Environment variable holding the upstreams' API key (never the key itself in the file). */
  apiKeyEnv: v.optional(v.string()),
  upstreamModel: v.optional(v.string()),
  contextWindow: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1))),
  maxConcurrency: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1))),
  aliases: v.optional(v.array(v.string())),
});

const LocalModel = v.strictObject({
  name: v.optional(v.pipe(v.string(), v.minLength(1))),
  backend: v.optional(v.picklist(["llama-cpp", "webgpu"])),
  /** A model reference: store name, .gguf path, hf:, https:// or pypi: reference. */
  source: v.pipe(v.string(), v.minLength(1)),
  aliases: v.optional(v.array(v.string())),
  /** Split `<think>` blocks out as reasoning (true) or leave them in the answer (false); default: from the chat template. */
  reasoning: v.optional(v.boolean()),
  /** A smaller model with the same vocabulary that drafts tokens for this one (speculative decoding). */
  draftModel: v.optional(v.pipe(v.string(), v.minLength(1))),
  /** Most tokens the draft proposes per step (default 8). */
  draftMax: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(64))),
});

const GPU_LAYERS = 'expected "auto", "max" or a number of layers (0: the CPU)';

const ConfigFile = v.strictObject({
  host: v.optional(v.string()),
  port: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(65535))),
  apiKeys: v.optional(v.array(v.pipe(v.string(), v.minLength(1)))),
  noAuth: v.optional(v.boolean()),
  parallel: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1))),
  ctxSize: v.optional(v.pipe(v.number(), v.integer(), v.minValue(256))),
  threads: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1))),
  /** Backend of local models that do not name one. */
  backend: v.optional(v.picklist(["llama-cpp", "webgpu"])),
  /** llama.cpp's GPU backend: "auto", "cuda", "vulkan", "metal" or "none" (the CPU only). */
  gpu: v.optional(v.picklist(GPU_FLAG_VALUES)),
  /** Layers on the GPU: "auto", "max" or a number (0: the CPU). */
  gpuLayers: v.optional(v.union([v.picklist(["auto", "max"]), v.pipe(v.number(), v.integer(GPU_LAYERS), v.minValue(0, GPU_LAYERS))], GPU_LAYERS)),
  queue: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0))),
  maxOutputTokens: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1))),
  /** Disk space for saved prompt prefixes: bytes, or a size such as "8G" (0: RAM only). */
  cacheDisk: v.optional(v.pipe(
    v.union([v.number(), v.string()]),
    v.transform((value) => (typeof value === "number" ? value : toBytes(value) ?? Number.NaN)),
    v.check((bytes) => Number.isInteger(bytes) && bytes >= 0, "expected a size such as 8G, 500M or 0, or a number of bytes"),
  )),
  /** Tokens a sequence must hold, not yet on disk, before it is saved (default 1024). */
  cacheMinTokens: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1))),
  /** Evaluate long prompts in a second context beside the running streams (default true). */
  prefillLane: v.optional(v.boolean()),
  logLevel: v.optional(v.picklist(["debug", "info", "warn", "error"])),
  models: v.optional(v.array(v.union([RemoteModel, LocalModel]))),
  /** keepAlive, maxLoadedModels, maxMemory, pullOnDemand, cacheTypeK, cacheTypeV, flashAttention. */
  ...RESIDENCY_CONFIG,
});

export type ConfigFile = v.InferOutput<typeof ConfigFile>;

/** A model as `serve` declares it to the engine. */
export type ModelDeclaration =
  | { kind: "local"; name?: string; source: string; aliases: string[]; backend?: "llama-cpp" | "webgpu"; reasoning?: boolean; draftModel?: string; draftMax?: number }
  | { kind: "remote"; name: string; upstreams: string[]; apiKey?: string; upstreamModel?: string; contextWindow?: number; maxConcurrency?: number; aliases: string[] };

/** Reads and validates a config file; every problem names the key path. */
export function readConfigFile(path: string, env: NodeJS.ProcessEnv = process.env): ConfigFile & { declarations: ModelDeclaration[] } {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, "utf8"));
  } catch (error) {
    throw new UsageError(`cannot read config ${path}: ${(error as Error).message}`, "the config file must be JSON");
  }
  const result = v.safeParse(ConfigFile, raw);
  if (!result.success) {
    const issue = result.issues[0];
    const key = v.getDotPath(issue) ?? "(root)";
    throw new UsageError(`config ${path}: ${key}: ${issue.message}`, "see the configuration section of the README");
  }
  const declarations = (result.output.models ?? []).map((model, index) => toDeclaration(model, `models.${index}`, env));
  return { ...result.output, declarations };
}

function toDeclaration(model: NonNullable<ConfigFile["models"]>[number], path: string, env: NodeJS.ProcessEnv): ModelDeclaration {
  if ("upstreams" in model) {
    const apiKey = model.apiKeyEnv ? env[model.apiKeyEnv] : undefined;
    if (model.apiKeyEnv && !apiKey) throw new UsageError(`config: ${path}.apiKeyEnv: environment variable ${model.apiKeyEnv} is not set`);
    const { name, upstreams, upstreamModel, contextWindow, maxConcurrency } = model;
    return { kind: "remote", name, upstreams, apiKey, upstreamModel, contextWindow, maxConcurrency, aliases: model.aliases ?? [] };
  }
  const { draftModel, draftMax } = model;
  return { kind: "local", name: model.name, source: model.source, aliases: model.aliases ?? [], backend: model.backend, reasoning: model.reasoning, ...(draftModel ? { draftModel } : {}), ...(draftMax ? { draftMax } : {}) };
}

/**
 * Parses `--model` values: `<ref>`, `<name>=<ref>`, or `<name>=openai+http(s)://host:port/v1[#upstream-model]` for
 * a remote replica (the fragment names the model the upstream serves, when it differs from `<name>`); the same
 * name given several times with remote URLs declares several replicas of one model.
 */
export function parseModelFlags(values: string[]): ModelDeclaration[] {
  const declarations: ModelDeclaration[] = [];
  for (const value of values) {
    const match = /^([^=]+)=(.+)$/.exec(value);
    const name = match?.[1];
    const ref = match ? match[2] : value;
    if (ref.startsWith("openai+")) {
      const [url = "", upstreamModel] = splitFragment(ref.slice("openai+".length));
      if (!name) throw new UsageError(`--model ${value}: a remote model needs a name`, "write --model name=openai+http://host:port/v1");
      if (!/^https?:\/\/[^/]/.test(url)) throw new UsageError(`--model ${value}: ${url} is not an http(s) URL`);
      const existing = declarations.find((d) => d.kind === "remote" && d.name === name);
      if (existing?.kind !== "remote") {
        declarations.push({ kind: "remote", name, upstreams: [url], aliases: [], ...(upstreamModel ? { upstreamModel } : {}) });
        continue;
      }
      if (upstreamModel && existing.upstreamModel && upstreamModel !== existing.upstreamModel) {
        throw new UsageError(`--model ${value}: the replicas of ${name} name different upstream models (${existing.upstreamModel}, ${upstreamModel})`);
      }
      existing.upstreams.push(url);
      existing.upstreamModel ??= upstreamModel;
      continue;
    }
    declarations.push({ kind: "local", name, source: ref, aliases: [] });
  }
  return declarations;
}

/** `http://host/v1#org/model` → [`http://host/v1`, `org/model`]; the model part is percent-decoded when it can be. */
function splitFragment(url: string): [string, string | undefined] {
  const hash = url.indexOf("#");
  if (hash < 0) return [url, undefined];
  const fragment = url.slice(hash + 1);
  let model = fragment;
  try {
    model = decodeURIComponent(fragment);
  } catch {
    // kept as written: model names rarely hold a % at all
  }
  return [url.slice(0, hash), model || undefined];
}
