/**
 * What a loaded llama.cpp model holds beside its context where the machine and settings allow it: the CPU's thread
 * pool and per-step threads, the prefill lane's context, the prefix cache's disk tier.
 */
import { freemem } from "node:os";
import type { LlamaContext, LlamaContextOptions, LlamaModel } from "node-llama-cpp";
import type { OpenedEmbeddingContext } from "./embedding-context.js";
import type { ModelCores } from "./core-budget.js";
import type { CoreSplit } from "./core-share.js";
import { applyDecodeThreads, DEFAULT_MIN_TOKENS_FOR_ALL_THREADS, type DecodeSteps } from "./decode-threads.js";
import type { LlamaCppModelOptions } from "./llama-cpp-model-options.js";
import type { PrefillLane, PrefillLaneParts } from "./prefill-lane.js";
import { describeKvCacheTypes } from "./kv-cache-types.js";
import { readPrefixCacheKey } from "./prefix-cache-key.js";
import { PrefixDiskCache } from "./prefix-disk-cache.js";
import type { StepDevice } from "./step-planner.js";
import type { DraftModel } from "./draft-model.js";
import { StepInterrupter } from "./step-interrupter.js";
import { attachThreadPool, type AttachedThreadPool } from "./thread-pool.js";

/** What a loaded model holds beside its context, where the machine and settings allow it. */
export interface ModelParts {
  /** Where its layers run: the step planner's starting guess and calibration size. */
  device: StepDevice;
  pool?: AttachedThreadPool;
  /** How its CPU context's decode steps run (decode-threads.ts); absent on a GPU. */
  steps?: DecodeSteps;
  disk?: PrefixDiskCache;
  lane?: PrefillLane;
  cores?: CoreSplit;
  /** Its part of the process's cores, which it leaves at its unload. */
  modelCores: ModelCores;
  draft?: DraftModel;
  /** A prefix can be copied between its sequences by their cells (copy-prefix.ts): a model on the CPU. */
  cellCopies?: boolean;
  /** Its event readers run while the next step computes (reader-wakes.ts): a model whose every layer is on a GPU. */
  readersDuringSteps?: boolean;
}

/**
 * A server opens the lane's context beside the load, so that its first long prompt (an agent's first turn) does not
 * wait for it, when the context takes at most this share of the memory the machine has available; otherwise, at the
 * first long prompt.
 */
const LANE_WARM_MEMORY_SHARE = 0.25;

export async function laneFitsAtLoad(model: LlamaModel, ctxSize: number): Promise<boolean> {
  const { cpuRam } = await model.fileInsights.estimateContextResourceRequirementsV2({ contextSize: ctxSize, sequences: 1, modelGpuLayers: 0 });
  return cpuRam <= freemem() * LANE_WARM_MEMORY_SHARE;
}

/** The prefill lane's context and what runs it; a context that cannot be created (memory) costs the lane, not the model. */
export async function openLaneContext(model: LlamaModel, ctxSize: number, options: LlamaCppModelOptions, cores: CoreSplit, cacheOptions: Partial<LlamaContextOptions>): Promise<PrefillLaneParts | undefined> {
  let context: LlamaContext;
  try {
    // The main context's KV cache options: the lane's states move into it.
    context = await model.createContext({ contextSize: ctxSize, sequences: 1, threads: options.threads, ...cacheOptions });
  } catch {
    return undefined;
  }
  const { pool } = useCpuThreads(context, model, options.threads, () => cores.laneCores());
  const steps = pool && StepInterrupter.attach(context, (on) => pool.interrupt(on));
  return { context, mainStreams: options.parallel, steps, cores, release: () => pool?.release() };
}

/**
 * The embedding context, opened at a model's first embedding request; on the CPU its steps take the cores the main
 * context leaves it (core-share.ts), with a thread pool of its own, as the prefill lane's do.
 */
export async function openEmbeddingContext(model: LlamaModel, contextSize: number, threads: number, cores: CoreSplit | undefined): Promise<OpenedEmbeddingContext> {
  const context = await model.createEmbeddingContext({ contextSize, threads });
  // The LlamaContext node-llama-cpp's embedding context evaluates in (internal to the pinned 3.x release).
  const inner = (context as unknown as { _llamaContext?: LlamaContext })._llamaContext;
  const pool = cores && inner ? useCpuThreads(inner, model, threads, () => cores.embeddingCores()).pool : undefined;
  return { context, release: () => pool?.release() };
}

/** The disk tier when configured; a folder that cannot be used costs a warning and the tier, not the model. */
export async function openDiskTier(options: LlamaCppModelOptions, context: LlamaContext): Promise<PrefixDiskCache | undefined> {
  const settings = options.prefixCacheDisk;
  if (!settings) return undefined;
  try {
    return await PrefixDiskCache.open(await readPrefixCacheKey(options.path, options.llama, context, describeKvCacheTypes(options.kvCacheTypes)), settings);
  } catch (error) {
    const warn = settings.warn ?? ((message: string) => void process.stderr.write(`kiln: ${message}\n`));
    warn(`prefix cache: no disk tier for ${options.id} (${error instanceof Error ? error.message : String(error)})`);
    return undefined;
  }
}

/** How a CPU context runs its decode steps, as shown in the model's details. */
type CpuThreading = "persistent pool" | `one thread below ${number} tokens` | "fixed";

/**
 * CPU decoding: a persistent thread pool when the native module can attach one; otherwise steps of few tokens run on
 * one thread, which beats starting fresh worker threads for every step (see decode-threads.ts). Either way no step
 * uses more threads than the cores the process is getting (core-share.ts).
 */
export function useCpuThreads(context: LlamaContext, model: LlamaModel, threads: number, cores: () => number): { pool?: AttachedThreadPool; steps?: DecodeSteps; threading: CpuThreading } {
  const pool = attachThreadPool(context, model, threads);
  const minTokensForAllThreads = pool?.pooled ? 0 : DEFAULT_MIN_TOKENS_FOR_ALL_THREADS;
  const steps = applyDecodeThreads(context, { threads, minTokensForAllThreads, cores, use: pool?.pooled ? pool.use : undefined, decodeNow: pool?.decodeNow,
    pause: pool?.pooled ? pool.pause : undefined });
  if (pool?.pooled) return { pool, steps, threading: "persistent pool" };
  return { pool, steps, threading: steps ? `one thread below ${DEFAULT_MIN_TOKENS_FOR_ALL_THREADS} tokens` : "fixed" };
}
