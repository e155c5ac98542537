/**
 * Threads per decode step, chosen by the step's size. node-llama-cpp's prebuilt llama.cpp has no persistent thread
 * pool (built without OpenMP, none attached to the context), so every decode call creates its worker threads afresh
 * and the two sides then meet at hundreds of spin barriers per step. For a step of a few tokens that start-up and
 * waiting cost more than the extra thread computes: on 2 cores one stream generates ~2.5× faster on one thread than
 * on two, while a 512-token prompt still runs ~1.9× faster on two (bench/results/2026-11-23-vm-decode-threads.md).
 * So steps below `minTokensForAllThreads` run on one thread and larger ones on all of them. With a persistent pool
 * (thread-pool.ts) every step may use all threads. Either way a step uses no more threads than the cores the
 * process is getting (core-share.ts).
 */
import type { LlamaContext } from "node-llama-cpp";
import { shadowMethod } from "./native-module.js";

export interface DecodeThreadsPolicy {
  /** Threads for large steps (prompt evaluation, wide batches). */
  threads: number;
  /** Steps with fewer tokens than this run on one thread. */
  minTokensForAllThreads: number;
  /** The most threads the machine has room for now; absent: `threads`. */
  cores?: () => number;
  /** Called with each step's thread count before the step (a persistent pool switches to that many workers). */
  use?: (threads: number) => void;
}

/** Where the measurements put the break-even on the CPUs measured so far (see the module comment). */
export const DEFAULT_MIN_TOKENS_FOR_ALL_THREADS = 16;

/** The native context methods the policy hooks (internal to node-llama-cpp, present in the pinned 3.x release). */
interface NativeContext {
  initBatch(size: number): void;
  decodeBatch(): Promise<void>;
  setThreads(threads: number): void;
}

/** The threads a step of `tokens` tokens runs on. */
export function threadsForStep(policy: DecodeThreadsPolicy, tokens: number): number {
  if (tokens < policy.minTokensForAllThreads) return 1;
  return Math.max(1, Math.min(policy.threads, policy.cores?.() ?? policy.threads));
}

/**
 * Makes `context` pick its threads per decode step. Returns false (and changes nothing) when the installed
 * node-llama-cpp lacks the hooks, so the context keeps its fixed thread count.
 */
export function applyDecodeThreads(context: LlamaContext, policy: DecodeThreadsPolicy): boolean {
  const native = (context as unknown as { _ctx?: Partial<NativeContext> })._ctx;
  if (!native || policy.threads <= 1) return false;
  const { initBatch, decodeBatch, setThreads } = native;
  if (typeof initBatch !== "function" || typeof decodeBatch !== "function" || typeof setThreads !== "function") return false;
  let stepTokens = 0;
  shadowMethod(native, "initBatch", (size: number) => {
    stepTokens = size;
    initBatch.call(native, size);
  });
  // node-llama-cpp sets its own thread allocation just before each decode; this runs after it and has the last word.
  shadowMethod(native, "decodeBatch", () => {
    const threads = threadsForStep(policy, stepTokens);
    policy.use?.(threads);
    setThreads.call(native, threads);
    return decodeBatch.call(native);
  });
  return true;
}
