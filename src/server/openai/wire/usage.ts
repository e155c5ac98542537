/** Engine Usage → the usage objects of chat/completions, completions and responses (all real counts). */
import type { Usage } from "../../../engine/index.js";

/** Chat and legacy completions usage; `cached_tokens` is the prefix the engine really reused. */
export interface ChatUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  prompt_tokens_details: { cached_tokens: number };
  completion_tokens_details?: { reasoning_tokens: number };
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
    ...(usage.reasoningTokens !== undefined ? { completion_tokens_details: { reasoning_tokens: usage.reasoningTokens } } : {}),
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
