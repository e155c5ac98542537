/**
 * How many prompt tokens a sequence evaluates per decode step. A prompt queued whole is decoded in batches of
 * node-llama-cpp's full batch size (512 tokens), each of which holds every other sequence's next token: one client's
 * 5.7k-token prompt took another's stream from 9 ms to 3.8 s per token. So prompts are evaluated in chunks that share
 * each step with the generating sequences (chunked prefill, as in vLLM and SGLang), sized by measured time rather than
 * a fixed count, because the cost of a prompt token against a decode step varies by model, CPU and load:
 * - while others generate, a chunk costs about half what their own step costs, so their steps take about 1.5× as
 *   long (a chunk costing a whole step gave 2.5× at the median and 4× at p95 under load:
 *   bench/results/2026-11-24-vm-long-prompts.md);
 * - alone, a chunk lasts about ALONE_CHUNK_MS, and holds at least MIN_ALONE_CHUNK tokens, more deep in a prompt:
 *   smaller batches cost prompt speed, and more so as the context grows, since every batch reads the whole KV cache
 *   (llama-bench on Qwen2.5-Coder-0.5B, 2 threads: 64-token batches 9% slower than 512 at depth 0, 32-token ones 2×
 *   slower at depth 4k, where 128 are as fast as 512; at depth 16k, 128 are 10% slower than 512). A request that
 *   arrives meanwhile waits at most one chunk.
 *   A client that goes away mid-chunk stops it at once where steps are interruptible (step-interrupter.ts).
 */

/**
 * Prompts (uncached parts) of at most this many tokens are evaluated whole: chunking them would hold a new request's
 * first token for many steps to spare the running streams one slightly longer step.
 */
export const WHOLE_PROMPT_TOKENS = 64;
/** Target duration of a chunk evaluated while no other sequence generates. */
const ALONE_CHUNK_MS = 500;
/** A shared chunk before anything is measured. */
const FIRST_SHARED_CHUNK = 32;
/** Alone chunks stay within these bounds (the upper one is node-llama-cpp's default batch size). */
const MIN_ALONE_CHUNK = 128;
export const MAX_CHUNK = 512;
/** Deep in a prompt an alone chunk holds at least depth ÷ this many tokens (128 at 4k, 256 at 8k, 512 from 16k). */
const DEPTH_PER_CHUNK_TOKEN = 32;
/** A shared chunk's cost as a fraction of the others' step. */
const SHARED_COST = 0.5;
/** Weight of a new measurement in the running estimates. */
const SMOOTHING = 0.3;

/**
 * One model's running estimates, shared by its requests (they run on the same context and threads). A context of one
 * sequence evaluates whole batches: no other sequence can share its steps, and no request can start before it ends.
 */
export class PrefillChunker {
  /**
   * Milliseconds per prompt token at the current prompt's position. Re-measured on every chunk: attention makes a
   * token late in a long prompt cost several times one early in it, so an estimate kept from the prompt's start
   * would let shared chunks stretch the others' steps more and more.
   */
  private msPerToken: number | undefined;
  /** The generating sequences' step without a chunk, as they see it (timed by the decode barrier). */
  private decodeMs: number | undefined;
  /** Fallback while no step without a chunk was timed: a shared chunk's time beyond its estimated cost. */
  private inferredDecodeMs: number | undefined;
  /** Prompt tokens evaluated in the shared step under way, for the barrier's timing of that step. */
  private sharedTokens = 0;

  constructor(private readonly soleSequence = false) {}

  /**
   * Prompt tokens for the next chunk; `shared`: other sequences are generating and wait for this step; `depth`: the
   * tokens already in the sequence.
   */
  chunkTokens(shared: boolean, depth = 0): number {
    if (this.soleSequence) return MAX_CHUNK;
    const minAlone = clamp(Math.round(depth / DEPTH_PER_CHUNK_TOKEN), MIN_ALONE_CHUNK, MAX_CHUNK);
    if (this.msPerToken === undefined) return shared ? FIRST_SHARED_CHUNK : minAlone;
    const alone = clamp(Math.round(ALONE_CHUNK_MS / this.msPerToken), minAlone, MAX_CHUNK);
    if (!shared) return alone;
    return clamp(Math.round((SHARED_COST * (this.decodeMs ?? this.inferredDecodeMs ?? 0)) / this.msPerToken), 1, alone);
  }

  /** Records a chunk of `tokens` prompt tokens whose evaluation took `ms`. */
  record(tokens: number, ms: number, shared: boolean): void {
    if (tokens <= 0 || !(ms > 0)) return;
    if (!shared) {
      this.msPerToken = smooth(this.msPerToken, ms / tokens);
      return;
    }
    this.sharedTokens += tokens;
    if (this.decodeMs !== undefined) return; // the barrier's timing of the whole step says more (recordStep)
    if (this.msPerToken === undefined) this.msPerToken = ms / tokens;
    this.inferredDecodeMs = smooth(this.inferredDecodeMs, Math.max(0, ms - tokens * this.msPerToken));
  }

  /**
   * Records a step of the generating sequences as they saw it, with or without prompt chunks in it. What the chunks
   * added to the step is their cost: measuring it there, rather than around the chunk's own evaluation, counts
   * everything a chunk makes the others wait for.
   */
  recordStep(ms: number, withChunk: boolean): void {
    if (!(ms > 0)) return;
    if (!withChunk) {
      this.decodeMs = smooth(this.decodeMs, ms);
      return;
    }
    const tokens = this.sharedTokens;
    this.sharedTokens = 0;
    // At least a tenth of the step per chunk, so a noisy step never makes prompt tokens look free.
    if (tokens > 0 && this.decodeMs !== undefined) this.msPerToken = smooth(this.msPerToken, Math.max(ms - this.decodeMs, ms / 10) / tokens);
  }
}

function smooth(previous: number | undefined, sample: number): number {
  return previous === undefined ? sample : previous + SMOOTHING * (sample - previous);
}

function clamp(value: number, min: number, max: number): number {
  return Math.min(max, Math.max(min, value));
}
