/**
 * A sequence a WebGPU model decodes, with the tokens its KV cache holds: a new prompt reuses the longest prefix it
 * shares with them (only the rest is evaluated), as the llama.cpp backend's slots do. A model has one session per
 * parallel sequence, each with its slot of the model's KV arena; the pool hands each request the free one that shares
 * the most of its prompt. Tokens are decoded through the model's step batcher, with the other sessions' tokens.
 */
import { EngineError } from "../../../errors/engine-error.js";
import type { DecodePlan, DecodeStepResult } from "./plan/decode.js";
import type { StepBatcher } from "./step-batcher.js";
import type { RowWant } from "./plan/token-batch.js";

export class DecodeSession {
  /** Tokens whose keys and values are in the cache, in order. */
  private cached: number[] = [];

  /** When it last served a request (least recently used goes first among equal prefixes). */
  lastUsed = 0;

  /** `prefixCache` false: every prompt is evaluated in full (for comparisons). */
  constructor(readonly plan: DecodePlan, private readonly steps: StepBatcher, private readonly prefixCache = true) {}

  /** How many leading tokens of `prompt` the cache could serve (at least its last token is always evaluated). */
  sharedPrefix(prompt: readonly number[]): number {
    const limit = this.prefixCache ? Math.min(this.cached.length, prompt.length - 1) : 0;
    let shared = 0;
    while (shared < limit && this.cached[shared] === prompt[shared]) shared++;
    return shared;
  }

  /** Keeps the longest cached prefix of `prompt` and drops the rest; returns its length. */
  reuse(prompt: readonly number[]): number {
    const shared = this.sharedPrefix(prompt);
    this.cached.length = shared;
    this.plan.position = shared;
    return shared;
  }

  /** Evaluates prompt tokens at the next positions in batches, without logits (see DecodePlan.prefill). */
  async prefill(tokens: readonly number[]): Promise<void> {
    const from = this.cached.length;
    this.cached.push(...tokens);
    await this.guard(from, () => this.plan.prefill(tokens));
  }

  /** Evaluates one token at the next position; `want` reads back its logits or best candidates (see StepBatcher.feed). */
  async feed(token: number, want: RowWant): Promise<DecodeStepResult> {
    const from = this.cached.length;
    this.cached.push(token);
    return this.guard(from, () => this.steps.feed(this.plan, token, want));
  }

  private async guard<T>(from: number, evaluate: () => Promise<T>): Promise<T> {
    try {
      return await evaluate();
    } catch (error) {
      // A failed evaluation leaves its positions unknown: forget everything from the first of them on.
      this.cached.length = this.plan.position = Math.min(this.plan.position, from);
      if (error instanceof EngineError) throw error;
      const cause = error instanceof Error ? error.message : String(error);
      throw new EngineError("backend_failure", `WebGPU decode step failed: ${cause}`, {}, { cause: error });
    }
  }
}

/** The sessions of one model; the engine's scheduler admits at most one request per session. */
export class SessionPool {
  private readonly free: Set<DecodeSession>;

  constructor(readonly sessions: DecodeSession[]) {
    this.free = new Set(sessions);
  }

  /** The free session sharing the longest prefix with `prompt`, then the least recently used. */
  acquire(prompt: readonly number[]): { session: DecodeSession; release(): void } {
    let best: { session: DecodeSession; shared: number } | undefined;
    for (const session of this.free) {
      const shared = session.sharedPrefix(prompt);
      if (!best || shared > best.shared || (shared === best.shared && session.lastUsed < best.session.lastUsed)) best = { session, shared };
    }
    if (!best) throw new EngineError("overloaded", "every sequence of this model is busy");
    const { session } = best;
    this.free.delete(session);
    return {
      session,
      release: () => {
        session.lastUsed = performance.now();
        this.free.add(session);
      },
    };
  }
}
