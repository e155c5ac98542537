/**
 * The one place engine finish reasons become OpenAI's (chat `finish_reason`, legacy completions, Responses
 * status). https://platform.openai.com/docs/api-reference/chat/object#chat/object-choices
 */
import type { FinishReason } from "../../../engine/index.js";

/** OpenAI's chat/completions finish reasons that kiln produces. */
export type OpenAIFinishReason = "stop" | "length" | "tool_calls";

/**
 * Maps an engine finish reason. A turn that made tool calls always ends in "tool_calls" unless it was cut by
 * the token limit: Zed and Roo only act on tool calls when they see it
 * (https://platform.openai.com/docs/api-reference/chat/object#chat/object-choices).
 */
export function toOpenAIFinishReason(reason: FinishReason, hasToolCalls: boolean): OpenAIFinishReason {
  if (reason === "length") return "length";
  if (reason === "tool-calls" || hasToolCalls) return "tool_calls";
  return "stop";
}
