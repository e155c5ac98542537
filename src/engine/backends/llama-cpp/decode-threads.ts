/**
 * Threads per decode step, chosen by the step's size. node-llama-cpp's prebuilt llama.cpp has no persistent thread
 * pool (built without OpenMP, none attached to the context), so every decode call creates its worker threads afresh
 * and the two sides then meet at hundreds of spin barriers per step. For a step of a few tokens that start-up and
 * waiting cost more than the extra thread computes: on 2 cores one stream generates ~2.5× faster on one thread than
 * on two, while a 512-token prompt still runs ~1.9× faster on two (bench/results/2026-11-23-vm-decode-threads.md).
 * So steps below `minTokensForAllThreads` run on one thread and larger ones on all of them. With a persistent pool
 * (thread-pool.ts) every step may use all threads. Either way a step uses no more threads than the cores the
 * process is getting (core-share.ts).
 *
 * With a pool, short steps are also decoded on the event loop's own thread rather than in node-llama-cpp's libuv work
 * item. On a CPU whose cores all compute, the loop thread that queues the work item is preempted by it (its call
 * returned after 1.0–1.4 ms of a 10 ms step for one stream of the default model on 2 cores) and then takes a core back
 * from the compute threads mid-step, where ggml's spin barriers make every thread wait for it. Decoding on the loop
 * thread is how llama.cpp's own server runs: one stream of the default model went from 95 to 120 tok/s (medians, in
 * process, 2 cores), a model whose steps take 24 ms gained nothing measurable
 * (bench/results/2026-11-26-vm-steps-on-loop.md). The loop is then blocked for the step, so only the steps of a few
 * streams that the model's planner expects to be short run there (StepPlanner.onLoop); prompts keep the work item,
 * and the loop stays free for requests while they are evaluated.
 *
 * Between steps a pool's workers poll for the next one, at llama.cpp's default level for ~180 ms after the last (2-core
 * EPYC), before they sleep: what a stream's next step needs, and a core kept busy for nothing once the model is idle —
 * after every reply, while an agent's own process works on it. So a context that has gone IDLE_PAUSE_MS without a
 * step sends its pool's workers to sleep (thread-pool.ts); ggml wakes them at the next step. Steps start only from the
 * event loop's thread, which also pauses, so a pause never races a step.
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
  /** Decodes the step's batch on the calling thread, returning llama_decode's result (thread-pool.ts); absent: never. */
  decodeNow?: () => number;
  /** Sends a persistent pool's polling workers to sleep (thread-pool.ts); called once the context has gone idle. */
  pause?: () => void;
}

/**
 * How long a context goes without a step before its pool sleeps: far longer than the host's work between a stream's
 * steps (0.5–3 ms on 2 cores), far shorter than ggml's ~180 ms of polling.
 */
export const IDLE_PAUSE_MS = 10;

/** How a context's decode steps run, once applyDecodeThreads has hooked them. */
export class DecodeSteps {
  /** Whether a step of this many tokens is decoded on the event loop's thread (where the policy can); none until set. */
  onLoop: (tokens: number) => boolean = () => false;
  /** Steps decoded on the event loop's thread so far. */
  loopSteps = 0;
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
 * Makes `context` pick its threads per decode step, and where each step runs. Returns undefined (and changes nothing)
 * when the installed node-llama-cpp lacks the hooks, so the context keeps its fixed thread count.
 */
export function applyDecodeThreads(context: LlamaContext, policy: DecodeThreadsPolicy): DecodeSteps | undefined {
  const native = (context as unknown as { _ctx?: Partial<NativeContext> })._ctx;
  if (!native || policy.threads <= 1) return undefined;
  const { initBatch, decodeBatch, setThreads } = native;
  if (typeof initBatch !== "function" || typeof decodeBatch !== "function" || typeof setThreads !== "function") return undefined;
  const steps = new DecodeSteps();
  const idle = policy.pause && new IdlePause(policy.pause);
  let stepTokens = 0;
  // Whether the event loop has turned since the last step decoded on its thread (see decodeOnLoop).
  let turned = true;
  const decodeOnLoop = (decodeNow: () => number): Promise<void> => {
    const decode = () => {
      turned = false;
      setImmediate(() => { turned = true; });
      return settle(decodeNow());
    };
    // node-llama-cpp dispatches a context's batch at once, in the microtask that queues it, when every sequence of
    // the context has a token queued. In a one-sequence context (`--parallel 1`, `kiln chat`) steps decoded here then
    // followed one another in one chain of microtasks: the loop never turned, so no socket was written (a stream's
    // tokens all arrived at its end), no timer ran and no request was read. Such a step waits for a turn of the loop
    // first; one dispatched from a turn (node-llama-cpp's usual schedule) runs at once.
    return turned ? decode() : new Promise<void>((resolve) => setImmediate(resolve)).then(decode);
  };
  shadowMethod(native, "initBatch", (size: number) => {
    stepTokens = size;
    initBatch.call(native, size);
  });
  // node-llama-cpp sets its own thread allocation just before each decode; this runs after it and has the last word.
  shadowMethod(native, "decodeBatch", () => {
    const threads = threadsForStep(policy, stepTokens);
    policy.use?.(threads);
    setThreads.call(native, threads);
    let step: Promise<void>;
    if (!policy.decodeNow || !steps.onLoop(stepTokens)) step = decodeBatch.call(native);
    else {
      steps.loopSteps++;
      step = decodeOnLoop(policy.decodeNow);
    }
    idle?.follow(step);
    return step;
  });
  return steps;
}

/**
 * Pauses a pool once its context has had no step in flight for IDLE_PAUSE_MS (see the module comment): once per idle
 * spell, since only a step's end arms the timer again.
 */
class IdlePause {
  private inFlight = 0;
  private lastEnd = 0;
  private timer: ReturnType<typeof setTimeout> | undefined;

  constructor(private readonly pause: () => void) {}

  /** A step has started; its end starts the idle clock again. */
  follow(step: Promise<void>): void {
    this.inFlight++;
    const ended = () => {
      this.inFlight--;
      this.lastEnd = performance.now();
      if (this.inFlight === 0) this.arm(IDLE_PAUSE_MS);
    };
    step.then(ended, ended);
  }

  private arm(ms: number): void {
    if (this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      if (this.inFlight > 0) return;
      const idleMs = performance.now() - this.lastEnd;
      if (idleMs < IDLE_PAUSE_MS) return this.arm(IDLE_PAUSE_MS - idleMs);
      this.pause();
    }, ms);
    // The timer never keeps the process alive on its own.
    this.timer.unref();
  }
}

/** The promise node-llama-cpp's decode work item gives for llama_decode's `result` (with its messages). */
function settle(result: number): Promise<void> {
  if (result === 0) return Promise.resolve();
  return Promise.reject(new Error(result === 1
    ? "could not find a KV slot for the batch (try reducing the size of the batch or increase the context)"
    : "Eval has failed"));
}
