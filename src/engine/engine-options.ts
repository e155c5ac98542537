/**
 * How an engine is built: the models to serve and the settings every backend is opened with. The engine declares
 * these shapes and the backends read them, so callers never reach into a backend for a type.
 */
import { availableParallelism } from "node:os";
import { newId, type IdFactory } from "../lib/ids.js";
import type { ModelDeclaration, OnDemandModels, RemoteModelSpec, ScriptedModelSpec } from "./model-specs.js";

/** A GPU backend of llama.cpp that can be asked for by name. */
export type GpuBackendName = "cuda" | "vulkan" | "metal";

/**
 * Where llama.cpp computes. `"auto"` (or true): the best GPU backend that works on this machine, else the CPU. A named
 * backend must work here: its absence is an error, never a silent fallback. `false`: the CPU only.
 */
export type GpuChoice = "auto" | GpuBackendName | boolean;

/**
 * Layers of each model offloaded to the GPU. `"auto"`: as many as fit in free VRAM beside the context (a partial
 * offload is warned about); `"max"`: all of them, an error when they do not fit; a number: that many (0: the CPU).
 */
export type GpuLayersChoice = "auto" | "max" | number;

/** The prefix cache's disk tier (backends that have one: llama.cpp). */
export interface PrefixDiskSettings {
  /** The cache folder shared by every model (`$KILN_HOME/cache/prefix`). */
  dir: string;
  /** Bound on the bytes of every saved state under `dir` together. */
  maxBytes: number;
  /** A sequence is saved once it holds at least this many tokens not already on disk (default 1,024). */
  minTokens?: number;
  /** Where warnings about unusable files go (default: stderr). */
  warn?(message: string): void;
}

/** Where a prompt diverged from the best cached sequence (the prefix-cache debug hook). */
export interface PrefixDivergence {
  /** Token position of the first difference (equals the reused prefix length before the last-token rule). */
  position: number;
  promptTokens: number;
  /** Tokens the chosen sequence held. */
  cachedTokens: number;
  /** A little text around the divergence: what the cache held and what the prompt has there. */
  cachedExcerpt: string;
  promptExcerpt: string;
}

/** An element type of llama.cpp's KV cache: f16 (default), or q8_0 and q4_0 for about half and a third of the memory. */
export type KvCacheType = "f16" | "q8_0" | "q4_0";
export const KV_CACHE_TYPES: readonly KvCacheType[] = ["f16", "q8_0", "q4_0"];

/** The types of the K and V halves of the KV cache. */
export interface KvCacheTypes { k: KvCacheType; v: KvCacheType }

/** llama.cpp's flash attention: "auto" (llama.cpp decides, as llama-server's default: on wherever the device runs it), "on" or "off". */
export type FlashAttentionChoice = "auto" | "on" | "off";
export const FLASH_ATTENTION_CHOICES: readonly FlashAttentionChoice[] = ["auto", "on", "off"];

/** The settings every backend is opened with; each backend uses those that apply to it. */
export interface BackendSettings {
  /** Sequences decoded together per model. */
  parallel: number;
  /** CPU threads. */
  threads: number;
  /** Tool-call ids (injectable for golden files). */
  ids: IdFactory;
  /**
   * Tokens per sequence, prompt + output. Default: llama.cpp, the largest context up to the model's train context
   * that fits the memory available for all sequences (at most 32,768 on the CPU; llama-cpp/fit-context.ts); webgpu,
   * min(train context, 4096).
   */
  ctxSize?: number;
  /**
   * With no ctxSize, a llama.cpp model's default context holds at most this many tokens per sequence: a one-shot
   * reply (`kiln run`) knows what its prompt and reply can take, and a context of the model's whole length would cost
   * its KV cache's memory and the time llama.cpp takes to clear it (1 s and 0.9 GB for Qwen2.5-Coder-1.5B's 32k on 2
   * CPU cores).
   */
  ctxSizeAtMost?: number;
  /** Reuse cached prompt prefixes across requests (default true; false for benchmarks). */
  prefixCache?: boolean;
  /**
   * On the CPU, evaluate long prompts in a second context beside the generating sequences (llama.cpp models; default
   * true; false: in chunks inside their decode steps, without that context's memory).
   */
  prefillLane?: boolean;
  /** Prompt tokens the WebGPU backend evaluates together (default 64; 1: token by token, a benchmark baseline). */
  promptBatch?: number;
  /**
   * Start each model's prompt worker as it loads rather than on the first long prompt, which would otherwise wait
   * for it (an agent's first turn after a restart; over a second on a small machine), and its prefill lane's context
   * where memory allows (half a second for a 0.5B model at 20k tokens). For servers.
   */
  warmUp?: boolean;
  /**
   * Tokenize and render long prompts on worker threads, so that a server's event loop stays free for its other
   * requests (default true). false: always in place, for a caller with one request at a time (`kiln run`, `kiln
   * chat`): a worker's start (1.1 s for the default model, 1.7 s for Qwen2.5-Coder-1.5B on 2 CPU cores) costs a
   * hundred times tokenizing 20 KB in place (8–12 ms).
   */
  promptThreads?: boolean;
  /** Save long prefixes under this folder too, so they outlive eviction and restarts (llama.cpp models). */
  prefixCacheDisk?: PrefixDiskSettings;
  /** llama.cpp's GPU backend: "auto" (default), a named one, or false for the CPU only. */
  gpu?: GpuChoice;
  /**
   * kiln's cache folder (`$KILN_HOME/cache`), where start-up facts are kept between runs: which prebuilt llama.cpp
   * CPU binaries passed node-llama-cpp's test on this machine (text/binary-checks.ts); absent: tested at every start.
   */
  cacheDir?: string;
  /** llama.cpp layers offloaded to the GPU (default "auto"). */
  gpuLayers?: GpuLayersChoice;
  /** llama.cpp's KV cache element types (default f16/f16). */
  kvCacheTypes?: KvCacheTypes;
  /** llama.cpp's flash attention (default "auto"). */
  flashAttention?: FlashAttentionChoice;
  /** Where warnings about a load go (a GPU load retried on the CPU, a partial offload); default: stderr. */
  warn?(message: string): void;
  /** Debug hook: where a prompt diverged from the best cached sequence (for a prefix-cache log). */
  onPrefixDivergence?(model: string, info: PrefixDivergence): void;
}

export interface EngineOptions extends Partial<BackendSettings> {
  models: ModelDeclaration[];
  /** Models served by remote OpenAI-compatible engines (replicas of vLLM, SGLang, llama-server, kiln). */
  remoteModels?: RemoteModelSpec[];
  /** Models that replay recorded events (tests of everything around the model, without loading one). */
  scriptedModels?: ScriptedModelSpec[];
  /** Backend of models that do not name one (default "llama-cpp"). */
  backend?: string;
  /** Requests that may wait per model beyond `parallel` (default 64); more are refused as overloaded. */
  queue?: number;
  /** Called as each model (local or remote) finishes loading, with how long it took (metrics). */
  onModelLoad?(model: string, milliseconds: number): void;
  /** Models loaded on the first request that names them; the declared ones above load at start and stay. */
  onDemand?: OnDemandModels;
  /** How long an on-demand model stays loaded after its last request: ms, 0 at once, negative never (default 5 min). */
  keepAliveMs?: number;
  /** At most this many models loaded at once (default: no limit but the memory budget). */
  maxLoadedModels?: number;
  /** Bytes the loaded models may take together (weights and contexts; default: the machine's memory less a margin). */
  memoryBudget?: number;
  /** How long a request waits for its model to load, or for room to load it, before it is refused (default 5 min). */
  loadTimeoutMs?: number;
  /** How long a model that failed to load is answered with that failure before it is tried again (default 30 s). */
  loadFailureMemoryMs?: number;
}

/** Ollama's default keep-alive: five minutes. */
export const DEFAULT_KEEP_ALIVE_MS = 5 * 60_000;

export const DEFAULT_PARALLEL = 4;
export const DEFAULT_QUEUE = 64;

/** The backend settings of these options, defaults filled in. */
export function toBackendSettings(options: Partial<BackendSettings>): BackendSettings {
  return {
    ...options,
    parallel: options.parallel ?? DEFAULT_PARALLEL,
    threads: options.threads ?? availableParallelism(),
    ids: options.ids ?? newId,
  };
}
