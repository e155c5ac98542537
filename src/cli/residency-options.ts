/**
 * `kiln serve`'s settings for which models are in memory and how they hold their KV cache: keep-alive, the limits on
 * loaded models, pulling catalog models on demand, the KV cache types and flash attention. As flags and as config
 * file keys (the flags win), merged into what the engine takes.
 */
import { InvalidArgumentError, Option, type Command } from "commander";
import * as v from "valibot";
import { FLASH_ATTENTION_CHOICES, KV_CACHE_TYPES, type FlashAttentionChoice, type KvCacheType, type KvCacheTypes } from "../engine/index.js";
import { formatDuration, parseDuration } from "../lib/duration.js";
import { flashAttentionOption, parseNumberIn, parseSize, toBytes } from "./options.js";
import { UsageError } from "./report-error.js";

/** The flags, as commander parses them. */
export interface ResidencyFlags {
  keepAlive?: number;
  maxLoadedModels?: number;
  maxMemory?: number;
  pullOnDemand?: boolean;
  cacheTypeK?: KvCacheType;
  cacheTypeV?: KvCacheType;
  flashAttention?: FlashAttentionChoice;
}

/** The merged settings. */
export interface ResidencySettings {
  /** ms; 0 at once; negative never; absent: the engine's default (5 minutes). */
  keepAliveMs?: number;
  maxLoadedModels?: number;
  maxMemory?: number;
  pullOnDemand: boolean;
  kvCacheTypes?: KvCacheTypes;
  flashAttention?: FlashAttentionChoice;
}

/** A commander value parser for a keep-alive: seconds or a duration such as 5m; -1 forever. */
export function parseKeepAlive(value: string): number {
  const ms = parseDuration(value);
  if (ms === undefined) throw new InvalidArgumentError("expected a duration such as 5m, 30s or 1h, 0 (unload after each request) or -1 (never)");
  return ms;
}

export function addResidencyOptions(command: Command): Command {
  const cacheType = (half: string) => new Option(`--cache-type-${half} <type>`, `element type of the KV cache's ${half.toUpperCase()} half: f16 (default), q8_0 (about half the memory) or q4_0 (about a third); a quantized V turns on flash attention`).choices(KV_CACHE_TYPES);
  return command
    .option("--keep-alive <duration>", "how long a model stays loaded after its last request: 5m (default), 30s, 1h, 0 (unload after each request) or -1 (never); a request's keep_alive field overrides it for its model", parseKeepAlive)
    .option("--max-loaded-models <n>", "models loaded at once; loading another first unloads the least recently used idle one (default: as many as the memory budget holds)", parseNumberIn(1, 1000, true))
    .option("--max-memory <size>", "memory the loaded models may take together, weights and contexts (default: the machine's memory less a tenth, at least 1G)", parseSize)
    .option("--pull-on-demand", "serve every catalog model by name, pulling one the store lacks on its first request")
    .addOption(cacheType("k"))
    .addOption(cacheType("v"))
    .addOption(flashAttentionOption());
}

const SIZE = v.pipe(
  v.union([v.number(), v.string()]),
  v.transform((value) => (typeof value === "number" ? value : toBytes(value) ?? Number.NaN)),
  v.check((bytes) => Number.isInteger(bytes) && bytes > 0, "expected a size such as 16G or 500M, or a number of bytes"),
);

/** The config file's keys for these settings (spread into its schema). */
export const RESIDENCY_CONFIG = {
  /** Seconds, or a duration such as "5m"; 0 unloads after each request, -1 never. */
  keepAlive: v.optional(v.pipe(
    v.union([v.number(), v.string()]),
    v.transform((value) => parseDuration(value) ?? Number.NaN),
    v.check((ms) => !Number.isNaN(ms), "expected seconds or a duration such as 5m, 30s or 1h (0: unload after each request, -1: never)"),
  )),
  maxLoadedModels: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1))),
  maxMemory: v.optional(SIZE),
  pullOnDemand: v.optional(v.boolean()),
  cacheTypeK: v.optional(v.picklist(KV_CACHE_TYPES)),
  cacheTypeV: v.optional(v.picklist(KV_CACHE_TYPES)),
  flashAttention: v.optional(v.picklist(FLASH_ATTENTION_CHOICES)),
};

type ResidencyConfig = { [K in keyof typeof RESIDENCY_CONFIG]?: v.InferOutput<(typeof RESIDENCY_CONFIG)[K]> };

/** The flags over the file's keys. */
export function resolveResidency(flags: ResidencyFlags, file: ResidencyConfig): ResidencySettings {
  const k = flags.cacheTypeK ?? file.cacheTypeK;
  const v = flags.cacheTypeV ?? file.cacheTypeV;
  const flashAttention = flags.flashAttention ?? file.flashAttention;
  if (flashAttention === "off" && v && v !== "f16") {
    throw new UsageError(`a ${v} V cache needs flash attention, which is set off`, "drop --flash-attention off, or keep the V cache f16");
  }
  return {
    keepAliveMs: flags.keepAlive ?? file.keepAlive,
    maxLoadedModels: flags.maxLoadedModels ?? file.maxLoadedModels,
    maxMemory: flags.maxMemory ?? file.maxMemory,
    pullOnDemand: flags.pullOnDemand ?? file.pullOnDemand ?? false,
    ...(k || v ? { kvCacheTypes: { k: k ?? "f16", v: v ?? "f16" } } : {}),
    ...(flashAttention ? { flashAttention } : {}),
  };
}

/** The start-up line about models on demand: what is offered, the keep-alive and the limits. */
export function describeResidency(settings: ResidencySettings, defaultKeepAliveMs: number, defaultBudget: number): string {
  const offered = settings.pullOnDemand ? "the store's and the catalog's models" : "every model in the store";
  const keepAlive = settings.keepAliveMs ?? defaultKeepAliveMs;
  const gib = (bytes: number) => `${(bytes / 1024 ** 3).toFixed(1)} GiB`;
  const limits = [
    ...(settings.maxLoadedModels ? [`at most ${settings.maxLoadedModels} loaded`] : []),
    `memory budget ${gib(settings.maxMemory ?? defaultBudget)}`,
  ];
  const unload = keepAlive < 0 ? "kept loaded" : keepAlive === 0 ? "unloaded after each request" : `unloaded after ${formatDuration(keepAlive)} idle`;
  return `models on demand: ${offered}, ${unload}, ${limits.join(", ")}`;
}
