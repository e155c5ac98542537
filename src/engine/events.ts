/**
 * The internal event language: `generate` yields these. Invariants (checked by `checkEventSequence`): exactly
 * one `start`, first; blocks never interleave and their indices rise from 0; every block start has one end;
 * `finish` or `error` is last.
 */
import type { EngineError } from "../errors/engine-error.js";

/** Why generation ended. Each surface maps these in one function. */
export type FinishReason = "stop" | "stop-sequence" | "length" | "tool-calls" | "aborted" | "error";

/** Where a reused prefix came from: a sequence still holding it, or a state saved on disk. */
export type CacheTier = "ram" | "disk";

/**
 * Real token counts. `inputTokens` counts the whole rendered prompt, `cachedInputTokens` the reused prefix of it,
 * `cacheTier` where that prefix came from (absent when nothing was reused or the backend does not say);
 * `reasoningTokens`, of the output, those generated inside a think block (local reasoning models only); `draft` the
 * drafted tokens (only for a model served with a draft model).
 */
export interface Usage { inputTokens: number; cachedInputTokens: number; outputTokens: number; cacheTier?: CacheTier; reasoningTokens?: number; draft?: DraftUsage }

/** Speculative decoding: tokens a draft model proposed that the target evaluated, and those the target kept. */
export interface DraftUsage { drafted: number; accepted: number }

/** Top alternatives at one generated position (only when requested). */
export interface TokenLogprob { token: string; logprob: number; top: Array<{ token: string; logprob: number }> }

/** A prompt token's logprob given the tokens before it; the first token has none (null). */
export interface PromptTokenLogprob { token: string; logprob: number | null; top: TokenLogprob["top"] | null }

/** The prompt of a completion that asked for echo: its text and, when asked, each token's logprob. */
export interface PromptEcho { text: string; logprobs?: PromptTokenLogprob[] }

export type GenerationEvent =
  /** First event. `model` is the resolved model id; `inputTokens`/`cachedInputTokens` are known before decoding. */
  | { type: "start"; model: string; inputTokens: number; cachedInputTokens: number; cacheTier?: CacheTier; echo?: PromptEcho }
  | { type: "text-start"; index: number }
  | { type: "text-delta"; index: number; text: string; logprobs?: TokenLogprob[] }
  | { type: "text-end"; index: number }
  | { type: "reasoning-start"; index: number }
  | { type: "reasoning-delta"; index: number; text: string }
  | { type: "reasoning-end"; index: number; signature?: string }
  /** A tool call opens with its id and name; arguments follow as JSON text fragments. */
  | { type: "tool-call-start"; index: number; id: string; name: string }
  | { type: "tool-call-delta"; index: number; json: string }
  /** `input` is the parsed arguments object (the concatenated deltas, parsed). */
  | { type: "tool-call-end"; index: number; input: unknown }
  | { type: "finish"; reason: FinishReason; stopSequence?: string; usage: Usage }
  | { type: "error"; error: EngineError };

export type BlockEvent = Extract<GenerationEvent, { index: number }>;
