/**
 * The step planner: one per loaded model, it decides how many prompt tokens of which requests join each decode step
 * beside the generating sequences (chunked prefill, the shape of vLLM's scheduler and llama-server's update_slots).
 *
 * Every step carries each generating sequence's next token; prompt tokens fill a per-step budget, oldest request
 * first (a request that arrived earlier gets its first token earlier, and they finish one after another rather than
 * all late together). The budget is the batch, less the generating tokens, as long as the step stays within
 * STEP_LIMIT_MS by the measured cost of a step (step-cost.ts):
 * - whole prompts are cheapest: a prompt token costs a fraction of a generated one in a large batch, and llama.cpp
 *   evaluates one sequence's tokens beside the streams' single tokens as a pass of its own, so every extra chunk adds
 *   a pass over the weights. Budgets of half the streams' step on 2 CPU cores gave 0.60× llama-server's throughput at
 *   8 clients with 5.5× its time to first token (bench/results/2026-11-26-vm-mixed-step-limit.md); this rule gave
 *   0.78–0.98× with a first token sooner than its (bench/results/2026-11-26-vm-mixed-step-limit-2s.md);
 * - the limit keeps a slow machine's streams moving: on 2 CPU cores a 1.5B model takes seconds for 512 prompt tokens,
 *   and a stream that waits two seconds for its next token is still a stream. It is no tighter because every prompt
 *   split across steps adds a step the streams wait through: with 1,000 ms (about 400 tokens on the 135M model), the
 *   second of two 230-token prompts arriving together was split over two steps, and 8 clients got 57–59 tok/s with
 *   an inter-token p95 of 546–684 ms, against 66–74 tok/s and 79–99 ms with the batch as the only bound (alternated
 *   runs). On a GPU a 512-token step takes a few milliseconds more than one token, so the limit never binds there;
 * - a step holds at least MIN_PROMPT_TOKENS, more deep in a prompt: smaller batches cost prompt speed, and more so as
 *   the context grows (llama-bench on Qwen2.5-Coder-0.5B, 2 threads: 64-token batches 9% slower than 512 at depth 0,
 *   32-token ones 2× slower at depth 4k, where 128 are as fast as 512; at depth 16k, 128 are 10% slower than 512).
 * No step holds more tokens than the context's batch, and a context of one sequence evaluates whole batches: no
 * other sequence can share its steps.
 *
 * The decode barrier (decode-barrier.ts) tells the planner when a step starts and how long it took; the planner
 * fits its cost model from those steps, so its decisions follow the hardware and its load, not the order in which
 * loads arrived.
 */
import { DEVICE_PRIOR, StepCostModel, type StepCostParts, type StepDevice } from "./step-cost.js";
import type { PrefixCopyWay } from "./copy-prefix.js";

export type { StepDevice } from "./step-cost.js";

/**
 * Prompts (uncached parts) of at most this many tokens are evaluated whole, outside the budget: chunking them would
 * hold a new request's first token for several steps to spare the running streams one slightly longer step.
 */
export const WHOLE_PROMPT_TOKENS = 64;
/** node-llama-cpp's batch: the most tokens one step evaluates. */
export const MAX_STEP_TOKENS = 512;
/** The longest a step with prompt tokens should take: what a generating stream may wait for its next token. */
export const STEP_LIMIT_MS = 2000;
/** The fewest prompt tokens a step holds (when the prompt has them), whatever the limit says. */
export const MIN_PROMPT_TOKENS = 128;
/**
 * The longest a step decoded on the event loop's thread may be expected to take (decode-threads.ts): the loop serves
 * no request meanwhile, so only steps about as long as one token of a 1.5B model on 2 CPU cores qualify.
 */
export const LOOP_STEP_MS = 50;
/**
 * The most generating streams whose steps may run on the event loop's thread. In process, 2 cores, the default model,
 * alternated rounds: one stream 103 against 82 tok/s in a work item, two 118 against 111, four 124 against 122; eight
 * (steps of about 55 ms) gained nothing. Qwen2.5-Coder-0.5B, whose steps take 24–40 ms, neither gained nor lost, quiet
 * or with a core busy (bench/results/2026-11-27-vm-steps-on-loop-streams.md).
 */
export const LOOP_STREAMS = 4;
/** Before the copy of a prefix is measured, a prompt copies another sequence's cached prefix from this many tokens. */
const UNMEASURED_COPY_TOKENS = 64;
/** The steps of a request that a move of another slot's cache must pay for in passes spared (a short reply's worth). */
const MOVE_STEPS = 16;
/** Deep in a prompt a step holds at least depth ÷ this many tokens (128 at 4k, 256 at 8k, 512 from 16k). */
const DEPTH_PER_MIN_TOKEN = 32;

/** One request evaluating its prompt in chunks. */
export interface PrefillTicket {
  /** Prompt tokens still to evaluate. */
  remaining: number;
  /** Tokens already in the sequence. */
  depth: number;
  /** Tokens granted in the step under way and not yet taken. */
  grant: number;
}

export interface StepPlannerOptions {
  device: StepDevice;
  /** The context holds one sequence. */
  soleSequence?: boolean;
  /** How many sequences are generating now (and so wait for each step). */
  generating: () => number;
  /**
   * Whether nothing else of the process computes now (another model, a load, the prefill lane), whose work a step on
   * the event loop's thread would hold up; absent: nothing else ever does.
   */
  alone?: () => boolean;
  /** The cells each sequence has, where a prefix can be copied by its cells (copy-prefix.ts); absent: streams only. */
  cellsPerSequence?: number;
}

export class StepPlanner {
  readonly cost: StepCostModel;
  private readonly queue: PrefillTicket[] = [];
  /** Whether the step under way has had its budget handed out. */
  private granted = false;
  private left = 0;
  private readonly step = { decoding: 0, promptTokens: 0, kiloDepthTokens: 0 };
  /** How long the latest measured step took; undefined before one was. */
  private lastStepMs: number | undefined;
  /** What copying another sequence's prefix into a slot costs beyond the step that follows it; undefined: unmeasured. */
  private prefixCopyMs: number | undefined;

  constructor(private readonly options: StepPlannerOptions) {
    this.cost = new StepCostModel(DEVICE_PRIOR[options.device]);
  }

  /** A request starts evaluating `tokens` prompt tokens on top of `depth` cached ones. */
  enqueue(tokens: number, depth: number): PrefillTicket {
    // With nothing generating and no prompt under way there is no step to share: what the last step left unused (a
    // prompt's last chunk, smaller than its grant) must not shrink this prompt's first chunk (on an H200 a 7.9k-token
    // prompt after another went in 17 steps, the first of 112 tokens, instead of 16).
    if (this.queue.length === 0 && this.options.generating() === 0) this.granted = false;
    const ticket = { remaining: tokens, depth, grant: 0 };
    this.queue.push(ticket);
    // A request arriving after the step's budget was handed out gets what is left of it.
    if (this.granted) this.give(ticket);
    return ticket;
  }

  /** The prompt tokens `ticket` evaluates in the step under way; 0: none, it waits for the next step. */
  take(ticket: PrefillTicket): number {
    if (!this.granted) this.grantStep();
    const tokens = ticket.grant;
    ticket.grant = 0;
    ticket.remaining -= tokens;
    this.step.promptTokens += tokens;
    this.step.kiloDepthTokens += (tokens * (ticket.depth + tokens / 2)) / 1000;
    ticket.depth += tokens;
    return tokens;
  }

  /** The request has evaluated its prompt, or stopped. */
  finish(ticket: PrefillTicket): void {
    const index = this.queue.indexOf(ticket);
    if (index >= 0) this.queue.splice(index, 1);
  }

  /**
   * The decode barrier released a step: the one before took `ms` (undefined when members joined or left during
   * it, so its contents are not known).
   */
  stepStarted(ms: number | undefined): void {
    const tokens = this.step.decoding + this.step.promptTokens;
    if (ms !== undefined && tokens > 0) this.cost.observe({ tokens, kiloDepthTokens: this.step.kiloDepthTokens }, ms);
    if (ms !== undefined) this.lastStepMs = ms;
    this.step.decoding = this.options.generating();
    this.step.promptTokens = 0;
    this.step.kiloDepthTokens = 0;
    this.granted = false;
  }

  /** The step's prompt-token budget, handed out oldest request first. */
  private grantStep(): void {
    this.granted = true;
    this.left = this.budget(this.options.generating(), this.queue[0]?.depth ?? 0);
    for (const ticket of this.queue) this.give(ticket);
  }

  private give(ticket: PrefillTicket): void {
    ticket.grant = Math.min(ticket.remaining, this.left);
    this.left -= ticket.grant;
  }

  /** Prompt tokens for one step beside `decoding` generating sequences, the first prompt `depth` tokens deep. */
  budget(decoding: number, depth: number): number {
    const room = Math.max(1, MAX_STEP_TOKENS - decoding);
    if (this.options.soleSequence) return room;
    const least = clamp(Math.round(depth / DEPTH_PER_MIN_TOKEN), MIN_PROMPT_TOKENS, room);
    const withinLimit = (STEP_LIMIT_MS - this.cost.ms({ tokens: decoding })) / this.cost.marginalMs(depth);
    return clamp(Math.floor(withinLimit), least, room);
  }

  /**
   * Whether a step of `tokens` tokens is decoded on the event loop's thread: on a CPU, for at most LOOP_STREAMS
   * generating sequences with nothing else computing, when both the cost model and the latest measured step say it is
   * short (the model does not see the attention cost of generating deep in a context, and before a step is measured
   * may be a guess for another machine). Every request arriving meanwhile waits for the loop, at most one such step.
   */
  onLoop(tokens: number): boolean {
    const last = this.lastStepMs;
    return this.options.device === "cpu" && this.options.generating() <= LOOP_STREAMS && (this.options.alone?.() ?? true)
      && last !== undefined && last <= LOOP_STEP_MS && this.cost.ms({ tokens }) <= LOOP_STEP_MS;
  }

  /**
   * Whether a prompt copies `tokens` cached tokens of another sequence, which holds `held` tokens, into its slot
   * rather than evaluating them (slot-pool.ts), and which way (copy-prefix.ts); undefined: evaluate them. llama.cpp
   * copies a sequence's whole KV stream, so that copy costs what the context holds per sequence, whatever the tokens,
   * plus a step of its own (the copy happens at a decode). A copy by cells moves the source's cells twice (out and
   * in), so it costs that share of the stream's copy, and no step. On 2 CPU cores a chat template's opening of 25
   * tokens of the default model is worth a copy either way; on a GPU, where those tokens cost almost nothing and
   * only streams are copied, only a long shared prefix (a coding agent's system prompt) is.
   */
  prefixCopy(tokens: number, held: number): PrefixCopyWay | undefined {
    const byCells = this.cellCopyMs(held);
    if (this.prefixCopyMs === undefined) return tokens >= UNMEASURED_COPY_TOKENS ? (byCells === undefined ? "stream" : "cells") : undefined;
    const { fixed } = this.cost.parts;
    const evaluating = this.cost.ms({ tokens, kiloDepthTokens: (tokens * tokens) / 2000 }) - fixed;
    const byStream = this.prefixCopyMs + fixed;
    if (evaluating <= Math.min(byStream, byCells ?? Number.POSITIVE_INFINITY)) return undefined;
    return byCells !== undefined && byCells < byStream ? "cells" : "stream";
  }

  /**
   * Whether moving a free slot's cache of `held` tokens into another (slot-choice.ts) costs less than the passes over
   * the weights it spares: llama.cpp decodes a step's sequences in one pass only where their ids are consecutive, so a
   * new sequence apart from the busy ones adds a pass to each step it takes part in (counted as MOVE_STEPS one-token
   * steps). Only by cells: a stream copy waits for a decode, which the move's target would not get.
   */
  movePays(held: number): boolean {
    const copyMs = this.cellCopyMs(held);
    return copyMs !== undefined && copyMs < MOVE_STEPS * this.cost.ms({ tokens: 1 });
  }

  /**
   * What copying `held` cells by cells costs: they move twice (out and in), the share of a stream copy they make
   * (0 before a copy was measured); undefined where copies go by stream only.
   */
  private cellCopyMs(held: number): number | undefined {
    const cellsPerSequence = this.options.cellsPerSequence;
    if (!cellsPerSequence) return undefined;
    return this.prefixCopyMs === undefined ? 0 : (this.prefixCopyMs * 2 * held) / cellsPerSequence;
  }

  /** Replaces the starting guess with a measurement (see calibrateStepCost), and the copy's cost when it was measured. */
  calibrated(parts: StepCostParts, prefixCopyMs?: number): void {
    this.cost.reset(parts);
    this.prefixCopyMs = prefixCopyMs;
  }
}

function clamp(value: number, min: number, max: number): number {
  return Math.min(max, Math.max(min, value));
}
