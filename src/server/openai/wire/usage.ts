/** Engine Usage → the usage objects of chat/completions, completions and responses (all real counts). */
import type { Usage } from "../../../engine/index.js";

/** Chat and legacy completions usage; `cached_tokens` is the prefix the engine really reused. */
export interface ChatUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  prompt_tokens_details: { cached_tokens: number };
  /** Tokens a local reasoning model wrote in its think block; for a model served with a draft model, the drafted
   * tokens it kept and those it rejected. */
  completion_tokens_details?: { reasoning_tokens?: number; accepted_prediction_tokens?: number; rejected_prediction_tokens?: number };
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
    ...toCompletionDetails(usage),
  };
}

/**
 * `completion_tokens_details` where kiln knows them: a reasoning model's think-block tokens, and OpenAI's counts for
 * predicted tokens, which is what a draft model's tokens are.
 */
function toCompletionDetails(usage: Usage): Pick<ChatUsage, "completion_tokens_details"> {
  if (usage.reasoningTokens === undefined && !usage.draft) return {};
  return {
    completion_tokens_details: {
      ...(usage.reasoningTokens !== undefined ? { reasoning_tokens: usage.reasoningTokens } : {}),
      ...(usage.draft ? { accepted_prediction_tokens: usage.draft.accepted, rejected_prediction_tokens: usage.draft.drafted - usage.draft.accepted } : {}),
    },
  };
}

/**
 * `reasoning_tokens` as a local reasoning model counts them; from other backends it is only known to be 0 when the
 * model produced no reasoning, so the details object is left out rather than filled with a guess.
 */
export function toResponsesUsage(usage: Usage, reasoned: boolean): ResponsesUsage {
  const reasoningTokens = usage.reasoningTokens ?? (reasoned ? undefined : 0);
  return {
    input_tokens: usage.inputTokens,
    input_tokens_details: { cached_tokens: usage.cachedInputTokens },
    output_tokens: usage.outputTokens,
    ...(reasoningTokens !== undefined ? { output_tokens_details: { reasoning_tokens: reasoningTokens } } : {}),
    total_tokens: usage.inputTokens + usage.outputTokens,
  };
}
