/**
 * Collected generations → the non-streaming text_completion object
 * (https://platform.openai.com/docs/api-reference/completions/object). Choices come one per generation, `n` to a
 * prompt in prompt order; an echoed prompt (from the start event) leads its choice's text and logprobs.
 */
import type { ChatResult, PromptTokenLogprob } from "../../../engine/index.js";
import { sumChoiceUsage } from "../wire/choices.js";
import { toOpenAIFinishReason, type OpenAIFinishReason } from "../wire/finish-reason.js";
import { SYSTEM_FINGERPRINT, type ResponseMeta } from "../wire/response-meta.js";
import { toChatUsage, type ChatUsage } from "../wire/usage.js";

/** How the legacy completion is shaped besides the events. */
export interface CompletionOptions extends ResponseMeta {
  /** Whether logprobs were requested (then each choice carries them, else null). */
  logprobs: boolean;
  includeUsage: boolean;
  /** Choices per prompt (`n`): usage counts each prompt once. */
  perPrompt: number;
}

/** OpenAI's legacy logprobs object: parallel arrays per token; an echoed prompt's first token has no logprob (null). */
export interface CompletionLogprobs {
  tokens: string[];
  token_logprobs: Array<number | null>;
  top_logprobs: Array<Record<string, number> | null>;
  text_offset: number[];
}

/** One choice of a text_completion or of a chunk. */
export interface CompletionChoice { text: string; index: number; logprobs: CompletionLogprobs | null; finish_reason: OpenAIFinishReason | null }

export interface TextCompletion {
  id: string;
  object: "text_completion";
  created: number;
  model: string;
  system_fingerprint: string;
  choices: CompletionChoice[];
  usage?: ChatUsage | null;
}

/** Builds the non-streaming text_completion body from the collected generations, in choice order. */
export function toTextCompletion(results: ChatResult[], options: CompletionOptions): TextCompletion {
  return {
    ...toCompletionEnvelope(options, results.map((result, index) => {
      const prefix = result.echo?.text ?? "";
      const text = result.blocks.flatMap((block) => (block.type === "text" ? [block.text] : [])).join("");
      const tokens = [...(result.echo?.logprobs ?? []), ...result.blocks.flatMap((block) => (block.type === "text" ? block.logprobs ?? [] : []))];
      return {
        text: prefix + text,
        index,
        logprobs: options.logprobs ? toLogprobs(tokens, 0) : null,
        // Legacy completions have no tool calls; "stop" | "length" only.
        finish_reason: toOpenAIFinishReason(result.finishReason, false),
      };
    })),
    usage: toChatUsage(sumChoiceUsage(results.map((result) => result.usage), options.perPrompt)),
  };
}

/** Parallel arrays as OpenAI writes them; `text_offset` counts characters from the start of the returned text. */
export function toLogprobs(tokens: PromptTokenLogprob[], startOffset: number): CompletionLogprobs {
  const result: CompletionLogprobs = { tokens: [], token_logprobs: [], top_logprobs: [], text_offset: [] };
  let offset = startOffset;
  for (const token of tokens) {
    result.tokens.push(token.token);
    result.token_logprobs.push(token.logprob);
    result.top_logprobs.push(topLogprobs(token));
    result.text_offset.push(offset);
    offset += token.token.length;
  }
  return result;
}

/**
 * A token's `top_logprobs` as OpenAI writes them: the best `logprobs` alternatives and the token itself, so up to
 * logprobs + 1 entries (one with `logprobs: 0`); null for an echoed prompt's first token, which has no logprob.
 */
function topLogprobs(token: PromptTokenLogprob): Record<string, number> | null {
  if (!token.top || token.logprob === null) return null;
  const top = Object.fromEntries(token.top.map((alternative) => [alternative.token, alternative.logprob]));
  return { ...top, [token.token]: token.logprob };
}

/** The text_completion fields around `choices`, the same on every chunk of a stream. */
export function toCompletionEnvelope(options: CompletionOptions, choices: CompletionChoice[]): TextCompletion {
  return { id: options.id, object: "text_completion", created: options.created, model: options.model, system_fingerprint: SYSTEM_FINGERPRINT, choices };
}
