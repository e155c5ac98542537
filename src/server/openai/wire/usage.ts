/** Engine Usage → the usage objects of chat/completions, completions and responses (all real counts). */
import type { DraftUsage, Usage } from "../../../engine/index.js";

/** Chat and legacy completions usage; `cached_tokens` is the prefix the engine really reused. */
export interface ChatUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  prompt_tokens_details: { cached_tokens: number };
  /** Only for a model served with a draft model: drafted tokens the model kept and those it rejected. */
  completion_tokens_details?: { accepted_prediction_tokens: number; rejected_prediction_tokens: number };
}

/**
 * Responses API usage (https://platform.openai.com/docs/api-reference/responses/object#responses/object-usage);
 * Codex reads the integers.
 */
export interface ResponsesUsage {
  input_tokens: number;
  input_tokens_details: { cached_tokens: number };
  output_tokens: number;
  output_tokens_details?: { reasoning_tokens: number };
  total_tokens: number;
}

export function toChatUsage(usage: Usage): ChatUsage {
  return {
    prompt_tokens: usage.inputTokens,
    completion_tokens: usage.outputTokens,
    total_tokens: usage.inputTokens + usage.outputTokens,
    prompt_tokens_details: { cached_tokens: usage.cachedInputTokens },
    ...(usage.draft ? { completion_tokens_details: toPredictionTokens(usage.draft) } : {}),
  };
}

/** OpenAI's counts for predicted tokens, which is what a draft model's tokens are. */
function toPredictionTokens(draft: DraftUsage): NonNullable<ChatUsage["completion_tokens_details"]> {
  return { accepted_prediction_tokens: draft.accepted, rejected_prediction_tokens: draft.drafted - draft.accepted };
}

/**
 * `reasoning_tokens` is only known to be 0 when the model produced no reasoning; the engine does not count
 * reasoning tokens apart, so the details object is left out rather than filled with a guess.
 */
export function toResponsesUsage(usage: Usage, reasoned: boolean): ResponsesUsage {
  return {
    input_tokens: usage.inputTokens,
    input_tokens_details: { cached_tokens: usage.cachedInputTokens },
    output_tokens: usage.outputTokens,
    ...(reasoned ? {} : { output_tokens_details: { reasoning_tokens: 0 } }),
    total_tokens: usage.inputTokens + usage.outputTokens,
  };
}
