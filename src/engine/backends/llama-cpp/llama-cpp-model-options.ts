/** What `loadLlamaCppModel` is told: the file, its context and sequences, and the CPU and cache machinery to use. */
import type { BatchingOptions, Llama } from "node-llama-cpp";
import type { GpuLayersChoice, PrefixDiskSettings, PrefixDivergence } from "../../engine-options.js";
import type { DraftDeclaration } from "../../model-specs.js";
import type { IdFactory } from "../../../lib/ids.js";
import type { CoreBudget } from "./core-budget.js";
import type { KvCacheSettings } from "./kv-cache-types.js";
import type { SampleInline } from "./step-sampler.js";

/** How to load and serve one model (with its KV cache's types and flash attention, kv-cache-types.ts). */
export interface LlamaCppModelOptions extends KvCacheSettings {
  id: string;
  path: string;
  aliases?: string[];
  /** Whether the model thinks in `<think>` blocks; undefined: as its chat template says. */
  reasoning?: boolean;
  /** The opened bindings (shared by every model of an engine). */
  llama: Llama;
  /** Sequences decoded together in one context. */
  parallel: number;
  /** Tokens per sequence (prompt + output); default: the largest up to the train context that fits (fit-context.ts). */
  ctxSize?: number;
  /** With no ctxSize, the most tokens per sequence the default context takes (engine-options.ts). */
  ctxSizeAtMost?: number;
  /** Layers offloaded to the GPU (default "auto": as many as fit beside the context). */
  gpuLayers?: GpuLayersChoice;
  /** Where load warnings go (a GPU load retried on the CPU, a partial offload); default: stderr. */
  warn?(message: string): void;
  /** CPU threads for evaluation. */
  threads: number;
  /** The cores shared with the other models of the process (default: a budget of this model's own). */
  coreBudget?: CoreBudget;
  /** Reuse cached prompt prefixes across requests (default true). */
  prefixCache?: boolean;
  /** The prefix cache's disk tier (absent: RAM only; ignored without prefixCache). */
  prefixCacheDisk?: PrefixDiskSettings;
  /** Start the large-prompt thread at load, and the prefill lane's context beside it with memory to spare (servers). */
  warmUp?: boolean;
  /** Long prompts tokenized and rendered on worker threads (default true; false: in place, engine-options.ts). */
  promptThreads?: boolean;
  /** Where start-up facts are kept between runs (engine-options.ts). */
  cacheDir?: string;
  /**
   * On the CPU, evaluate long prompts in a second context beside the generating sequences (prefill-lane.ts; default
   * true; false: in chunks inside their steps).
   */
  prefillLane?: boolean;
  /** One native call samples a step's sequences (default true; false: for comparisons; "small-steps": large ones in work items, as off the CPU). */
  stepSampler?: boolean | SampleInline;
  /** On the CPU, decode short steps on the event loop's thread (decode-threads.ts; default true; false: for comparisons). */
  stepsOnLoop?: boolean;
  /** Wake event readers once the next step is under way (reader-wakes.ts; default: where every layer is on a GPU). */
  readersDuringSteps?: boolean;
  /** node-llama-cpp batching options for the context (measurements record the dispatched batches through it). */
  batching?: BatchingOptions;
  ids?: IdFactory;
  /** A smaller model with the same vocabulary that drafts tokens for this one (draft-model.ts). */
  draft?: DraftDeclaration;
  /** Debug hook: where a prompt diverged from the best cached sequence. */
  onPrefixDivergence?(modelId: string, info: PrefixDivergence): void;
}
