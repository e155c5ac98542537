/**
 * The one sequence a WebGPU model decodes, with the tokens its KV cache holds: a new prompt reuses the longest
 * prefix it shares with them (only the rest is evaluated), as the llama.cpp backend's slots do.
 */
import { EngineError } from "../../errors.js";
import type { DecodePlan, DecodeStepResult } from "./plan/decode.js";

export class DecodeSession {
  /** Tokens whose keys and values are in the cache, in order. */
  private cached: number[] = [];

  /** `prefixCache` false: every prompt is evaluated in full (for comparisons). */
  constructor(private readonly plan: DecodePlan, private readonly prefixCache = true) {}

  /** Keeps the longest cached prefix of `prompt`, leaving at least its last token to evaluate; returns its length. */
  reuse(prompt: readonly number[]): number {
    const limit = this.prefixCache ? Math.min(this.cached.length, prompt.length - 1) : 0;
    let shared = 0;
    while (shared < limit && this.cached[shared] === prompt[shared]) shared++;
    this.cached.length = shared;
    this.plan.position = shared;
    return shared;
  }

  /** Evaluates one token at the next position; `logits` reads the full distribution back. */
  async feed(token: number, logits: boolean): Promise<DecodeStepResult> {
    this.cached.push(token);
    try {
      return await this.plan.step(token, { logits });
    } catch (error) {
      // A failed step leaves that position unknown: forget everything from it on.
      this.cached.length = this.plan.position = Math.min(this.plan.position, this.cached.length - 1);
      if (error instanceof EngineError) throw error;
      const cause = error instanceof Error ? error.message : String(error);
      throw new EngineError("backend_failure", `WebGPU decode step failed: ${cause}`, {}, { cause: error });
    }
  }
}
