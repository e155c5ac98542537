/**
 * ChatResult → Anthropic `Message` (non-streaming response), plus the stop-reason and usage mappings that the
 * stream encoder shares.
 * @see https://docs.claude.com/en/api/messages (Message object)
 */
import type { ChatResult, ResultBlock, FinishReason, Usage } from "../../engine/index.js";
import { toToolCallId } from "../../lib/ids.js";

/** `stop_reason` values kiln produces. */
export type AnthropicStopReason = "end_turn" | "max_tokens" | "stop_sequence" | "tool_use";

/** Anthropic `usage`. `input_tokens` excludes the cached prefix; the total prompt is input + cache_read. */
export interface AnthropicUsage {
  input_tokens: number;
  cache_creation_input_tokens: number;
  cache_read_input_tokens: number;
  output_tokens: number;
}

/** Output content blocks kiln produces. */
export type AnthropicContentBlock =
  | { type: "thinking"; thinking: string; signature: string }
  | { type: "text"; text: string }
  | { type: "tool_use"; id: string; name: string; input: unknown };

/** The non-streaming response body. */
export interface AnthropicMessage {
  id: string;
  type: "message";
  role: "assistant";
  model: string;
  content: AnthropicContentBlock[];
  stop_reason: AnthropicStopReason | null;
  stop_sequence: string | null;
  usage: AnthropicUsage;
}

/** The one mapping of finish reasons. An aborted generation has nobody listening; `end_turn` keeps it valid. */
export function toStopReason(reason: FinishReason): AnthropicStopReason {
  switch (reason) {
    case "length": return "max_tokens";
    case "stop-sequence": return "stop_sequence";
    case "tool-calls": return "tool_use";
    default: return "end_turn";
  }
}

/** Engine usage → Anthropic usage. kiln never writes a cache explicitly, so cache creation is always 0. */
export function toAnthropicUsage(usage: Usage): AnthropicUsage {
  return {
    input_tokens: Math.max(0, usage.inputTokens - usage.cachedInputTokens),
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: usage.cachedInputTokens,
    output_tokens: usage.outputTokens,
  };
}

/** Anthropic clients expect `toolu_` ids. */
export function toToolUseId(id: string): string {
  return toToolCallId("toolu_", id);
}

/** Folds a ChatResult into the Message body. `model` is the name the client asked for. */
export function toMessage(result: ChatResult, options: { id: string; model: string }): AnthropicMessage {
  return {
    id: options.id,
    type: "message",
    role: "assistant",
    model: options.model,
    content: result.blocks.map(toContentBlock),
    stop_reason: toStopReason(result.finishReason),
    stop_sequence: result.finishReason === "stop-sequence" ? (result.stopSequence ?? null) : null,
    usage: toAnthropicUsage(result.usage),
  };
}

function toContentBlock(block: ResultBlock): AnthropicContentBlock {
  switch (block.type) {
    case "text": return { type: "text", text: block.text };
    case "reasoning": return { type: "thinking", thinking: block.text, signature: block.signature ?? "" };
    case "tool-call": return { type: "tool_use", id: toToolUseId(block.id), name: block.name, input: block.input };
  }
}
