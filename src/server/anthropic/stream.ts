/**
 * GenerationEvent → Anthropic SSE text, one event at a time (a pure map with a little state: the message id and
 * the running usage). The grammar (https://docs.anthropic.com/en/api/messages-streaming#event-types):
 * message_start, per block start, deltas, stop, one message_delta with cumulative usage, message_stop; an in-band
 * `error` replaces the rest after a failure.
 * @see https://docs.claude.com/en/api/messages-streaming
 */
import type { GenerationEvent, EngineError } from "../../engine/index.js";
import { formatSseEvent } from "../sse.js";
import { toErrorBody } from "./errors.js";
import { toAnthropicUsage, toStopReason, toToolUseId } from "./response.js";

/** What the encoder needs besides the events. */
export interface MessagesStreamOptions {
  /** `msg_…` id of this message. */
  messageId: string;
  /** The model name the client asked for. */
  model: string;
}

/** Returns a function mapping each engine event to the SSE text it produces (possibly several events, or none). */
export function createMessagesEncoder(options: MessagesStreamOptions): (event: GenerationEvent) => string {
  return (event) => encodeEvent(event, options);
}

/** Encodes a whole event sequence (golden files and tests). */
export function encodeMessagesStream(events: GenerationEvent[], options: MessagesStreamOptions): string {
  const encode = createMessagesEncoder(options);
  return events.map(encode).join("");
}

/** The in-band error event sent after the 200 status is committed. */
export function encodeMessagesError(error: EngineError): string {
  return formatSseEvent("error", toErrorBody(error));
}

function encodeEvent(event: GenerationEvent, options: MessagesStreamOptions): string {
  switch (event.type) {
    case "start": {
      const usage = toAnthropicUsage({ inputTokens: event.inputTokens, cachedInputTokens: event.cachedInputTokens, outputTokens: 0 });
      const message = { id: options.messageId, type: "message", role: "assistant", model: options.model, content: [], stop_reason: null, stop_sequence: null, usage };
      return emit({ type: "message_start", message });
    }
    case "text-start": return blockStart(event.index, { type: "text", text: "" });
    case "reasoning-start": return blockStart(event.index, { type: "thinking", thinking: "", signature: "" });
    // Claude Code builds tool input only from input_json_delta; the real API opens with an empty one.
    case "tool-call-start":
      return blockStart(event.index, { type: "tool_use", id: toToolUseId(event.id), name: event.name, input: {} })
        + blockDelta(event.index, { type: "input_json_delta", partial_json: "" });
    case "text-delta": return event.text ? blockDelta(event.index, { type: "text_delta", text: event.text }) : "";
    case "reasoning-delta": return event.text ? blockDelta(event.index, { type: "thinking_delta", thinking: event.text }) : "";
    case "tool-call-delta": return event.json ? blockDelta(event.index, { type: "input_json_delta", partial_json: event.json }) : "";
    case "reasoning-end":
      return blockDelta(event.index, { type: "signature_delta", signature: event.signature ?? "" }) + blockStop(event.index);
    case "text-end":
    case "tool-call-end":
      return blockStop(event.index);
    case "finish": {
      const delta = { stop_reason: toStopReason(event.reason), stop_sequence: event.reason === "stop-sequence" ? (event.stopSequence ?? null) : null };
      return emit({ type: "message_delta", delta, usage: toAnthropicUsage(event.usage) }) + emit({ type: "message_stop" });
    }
    case "error": return encodeMessagesError(event.error);
  }
}

function blockStart(index: number, block: Record<string, unknown>): string {
  return emit({ type: "content_block_start", index, content_block: block });
}

function blockDelta(index: number, delta: Record<string, unknown>): string {
  return emit({ type: "content_block_delta", index, delta });
}

function blockStop(index: number): string {
  return emit({ type: "content_block_stop", index });
}

/** Every event's `event:` name equals its JSON `type` (both SDKs drop unnamed events). */
function emit(data: { type: string; [key: string]: unknown }): string {
  return formatSseEvent(data.type, data);
}
