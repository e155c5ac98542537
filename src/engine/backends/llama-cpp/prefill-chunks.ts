/**
 * How many prompt tokens a sequence evaluates per decode step. A prompt queued whole is decoded in batches of
 * node-llama-cpp's full batch size (512 tokens), each of which holds every other sequence's next token: one client's
 * 5.7k-token prompt took another's stream from 9 ms to 3.8 s per token. So prompts are evaluated in chunks that share
 * the decode steps with the generating sequences (chunked prefill, as in vLLM and SGLang):
 * - while others generate, one prompt token per step. llama.cpp gives each sequence its own KV stream and splits a
 *   batch over several streams into micro-batches holding the same number of tokens of each sequence
 *   (`split_equal`), so next to the others' one token each, a second prompt token starts a second micro-batch: a
 *   whole extra pass over the weights, which doubled their step (chunks sized to cost half a step gave 2.3-2.5x the
 *   undisturbed time per token at both the median and p95, bench/results/2026-11-24-vm-itl-8k-coder-*.md). One
 *   token rides in the others' micro-batch and adds only its own attention;
 * - alone, a chunk lasts about ALONE_CHUNK_MS, sized by measured time, because a prompt token's cost varies by model,
 *   CPU, load and position: long enough that per-step overhead is negligible, short enough that a client that goes
 *   away stops the work promptly.
 */

/**
 * Prompts (uncached parts) of at most this many tokens are evaluated whole: chunking them would hold a new request's
 * first token for many steps to spare the running streams one slightly longer step.
 */
export const WHOLE_PROMPT_TOKENS = 64;
/** Target duration of a chunk evaluated while no other sequence generates. */
const ALONE_CHUNK_MS = 250;
/** The first chunk, before anything is measured. */
const FIRST_CHUNK = 32;
/** Alone chunks stay within these bounds (the upper one is node-llama-cpp's default batch size). */
const MIN_ALONE_CHUNK = 64;
const MAX_CHUNK = 512;
/** Weight of a new measurement in the running estimate. */
const SMOOTHING = 0.3;

/** One model's running estimate, shared by its requests (they run on the same context and threads). */
export class PrefillChunker {
  /** Milliseconds per prompt token when evaluated alone (re-measured on every alone chunk). */
  private msPerToken: number | undefined;

  /** Prompt tokens for the next chunk; `shared`: other sequences are generating and wait for this step. */
  chunkTokens(shared: boolean): number {
    if (shared) return 1;
    if (this.msPerToken === undefined) return FIRST_CHUNK;
    return clamp(Math.round(ALONE_CHUNK_MS / this.msPerToken), MIN_ALONE_CHUNK, MAX_CHUNK);
  }

  /** Records a chunk of `tokens` prompt tokens evaluated alone in `ms`. */
  record(tokens: number, ms: number): void {
    if (tokens > 0 && ms > 0) this.msPerToken = this.msPerToken === undefined ? ms / tokens : this.msPerToken + SMOOTHING * (ms / tokens - this.msPerToken);
  }
}

function clamp(value: number, min: number, max: number): number {
  return Math.min(max, Math.max(min, value));
}
