/**
 * Translates an Anthropic Messages stream (https://docs.anthropic.com/en/api/messages-streaming) back into
 * GenerationEvents, so a remote reply feeds the same reducer as a local one. One reader per response.
 */
import { type FinishReason, type GenerationEvent, type Usage, EngineError, type EngineErrorCode, parseToolArguments, readToolArguments } from "../engine/index.js";

type Json = Record<string, any>;
type BlockKind = "text" | "reasoning" | "tool-call";

/** Returns a function that maps each parsed SSE payload to the events it stands for (often none or one). */
export function createAnthropicStreamReader(): (payload: Json) => GenerationEvent[] {
  const blocks = new Map<number, { kind: BlockKind; index: number; json: string }>();
  let nextIndex = 0;
  let usage: Usage = { inputTokens: 0, cachedInputTokens: 0, outputTokens: 0 };
  let stop: { reason: FinishReason; stopSequence?: string } = { reason: "stop" };
  /** A call whose arguments do not parse: cut off by max_tokens, or the server's failure; message_delta says which. */
  let unparsed: { index: number; json: string } | undefined;
  return (payload) => {
    switch (payload.type) {
      case "message_start": {
        const u = payload.message?.usage ?? {};
        const cached = u.cache_read_input_tokens ?? 0;
        usage = { inputTokens: (u.input_tokens ?? 0) + cached + (u.cache_creation_input_tokens ?? 0), cachedInputTokens: cached, outputTokens: 0 };
        return [{ type: "start", model: String(payload.message?.model ?? ""), inputTokens: usage.inputTokens, cachedInputTokens: cached }];
      }
      case "content_block_start": {
        const block = payload.content_block ?? {};
        const kind: BlockKind | undefined = block.type === "text" ? "text" : block.type === "thinking" ? "reasoning" : block.type === "tool_use" ? "tool-call" : undefined;
        if (!kind) return [];
        const index = nextIndex++;
        blocks.set(payload.index, { kind, index, json: "" });
        if (kind === "tool-call") return [{ type: "tool-call-start", index, id: String(block.id), name: String(block.name) }];
        return [{ type: kind === "text" ? "text-start" : "reasoning-start", index }];
      }
      case "content_block_delta": {
        const block = blocks.get(payload.index);
        const delta = payload.delta ?? {};
        if (!block) return [];
        if (delta.type === "text_delta") return [{ type: "text-delta", index: block.index, text: String(delta.text) }];
        if (delta.type === "thinking_delta") return [{ type: "reasoning-delta", index: block.index, text: String(delta.thinking) }];
        if (delta.type === "input_json_delta") {
          block.json += String(delta.partial_json);
          return [{ type: "tool-call-delta", index: block.index, json: String(delta.partial_json) }];
        }
        return [];
      }
      case "content_block_stop": {
        const block = blocks.get(payload.index);
        if (!block) return [];
        if (block.kind === "tool-call") {
          try {
            return [{ type: "tool-call-end", index: block.index, input: parseToolArguments(block.json, "the server") }];
          } catch {
            unparsed = block;
            return [];
          }
        }
        return [{ type: block.kind === "text" ? "text-end" : "reasoning-end", index: block.index }];
      }
      case "message_delta":
        stop = { reason: toFinishReason(payload.delta?.stop_reason), stopSequence: payload.delta?.stop_sequence ?? undefined };
        // Counts in message_delta are cumulative totals: overwrite, never add.
        usage = { ...usage, outputTokens: payload.usage?.output_tokens ?? usage.outputTokens };
        if (!unparsed) return [];
        return [{ type: "tool-call-end", index: unparsed.index, input: readToolArguments(unparsed.json, "the server", stop.reason === "length") }];
      case "message_stop":
        return [{ type: "finish", ...stop, usage }];
      case "error":
        return [{ type: "error", error: new EngineError(toErrorCode(payload.error?.type), String(payload.error?.message ?? "the server reported an error")) }];
      default:
        return [];
    }
  };
}

function toFinishReason(stopReason: unknown): FinishReason {
  switch (stopReason) {
    case "max_tokens": case "model_context_window_exceeded": return "length";
    case "stop_sequence": return "stop-sequence";
    case "tool_use": return "tool-calls";
    default: return "stop";
  }
}

/** Anthropic error types → engine codes (https://docs.anthropic.com/en/api/errors). */
function toErrorCode(type: unknown): EngineErrorCode {
  const codes: Record<string, EngineErrorCode> = {
    invalid_request_error: "invalid_request",
    authentication_error: "authentication",
    permission_error: "permission",
    not_found_error: "not_found",
    request_too_large: "request_too_large",
    rate_limit_error: "rate_limited",
    overloaded_error: "overloaded",
  };
  return codes[String(type)] ?? "backend_failure";
}
