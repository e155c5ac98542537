/**
 * GenerationEvents → chat.completion.chunk SSE frames
 * (https://platform.openai.com/docs/api-reference/chat-streaming). A short fold: a role chunk first, one delta
 * per text/reasoning/tool-call fragment (never content and tool_calls together), one finish chunk, the
 * include_usage chunk with empty choices, then `data: [DONE]`.
 */
import { toEngineError } from "../../engine/errors.js";
import type { GenerationEvent } from "../../engine/events.js";
import { toOpenAIErrorBody } from "./errors.js";
import { toOpenAIFinishReason, type OpenAIFinishReason } from "./finish-reason.js";
import { SYSTEM_FINGERPRINT, toCallId, type ResponseMeta } from "./response.js";
import { formatSseEvent } from "../sse.js";
import { toChatUsage, type ChatUsage } from "./usage.js";

/** What shapes the stream besides the events. */
export interface ChatStreamOptions extends ResponseMeta {
  /** `stream_options.include_usage`: usage:null on every chunk, then one usage chunk with choices []. */
  includeUsage: boolean;
}

/** The delta of one chunk; every field optional as on the wire. */
export interface ChunkDelta {
  role?: "assistant";
  content?: string | null;
  refusal?: null;
  reasoning_content?: string;
  tool_calls?: Array<{ index: number; id?: string; type?: "function"; function: { name?: string; arguments: string } }>;
}

export interface ChatCompletionChunk {
  id: string;
  object: "chat.completion.chunk";
  created: number;
  model: string;
  system_fingerprint: string;
  choices: Array<{ index: number; delta: ChunkDelta; logprobs: null; finish_reason: OpenAIFinishReason | null }>;
  usage?: ChatUsage | null;
}

/** Encodes a whole event stream as SSE frames (strings ending in a blank line). */
export async function* encodeChatCompletionStream(events: AsyncIterable<GenerationEvent>, options: ChatStreamOptions): AsyncGenerator<string> {
  const encode = createChatStreamEncoder(options);
  try {
    for await (const event of events) yield* encode(event);
  } catch (error) {
    // A failure outside the engine's own error events still ends the stream with an in-band error.
    yield* encode({ type: "error", error: toEngineError(error) });
  }
}

/** A stateful fold: each event → the frames it produces (often none). */
export function createChatStreamEncoder(options: ChatStreamOptions): (event: GenerationEvent) => string[] {
  const toolIndexOf = new Map<number, number>();
  const argumentsSent = new Set<number>();
  const chunk = (delta: ChunkDelta, finishReason: OpenAIFinishReason | null = null): string => formatSseEvent(undefined, toChunk(options, [{ index: 0, delta, logprobs: null, finish_reason: finishReason }]));
  const toolDelta = (index: number, json: string): string => chunk({ tool_calls: [{ index, function: { arguments: json } }] });

  return (event) => {
    switch (event.type) {
      case "start": return [chunk({ role: "assistant", content: "", refusal: null })];
      case "text-delta": return event.text ? [chunk({ content: event.text })] : [];
      case "reasoning-delta": return event.text ? [chunk({ reasoning_content: event.text })] : [];
      case "tool-call-start": {
        const index = toolIndexOf.size;
        toolIndexOf.set(event.index, index);
        return [chunk({ tool_calls: [{ index, id: toCallId(event.id), type: "function", function: { name: event.name, arguments: "" } }] })];
      }
      case "tool-call-delta": {
        if (!event.json) return [];
        argumentsSent.add(event.index);
        return [toolDelta(toolIndexOf.get(event.index) ?? 0, event.json)];
      }
      case "tool-call-end":
        // A call whose arguments never streamed still needs JSON text: "{}" for no arguments.
        return argumentsSent.has(event.index) ? [] : [toolDelta(toolIndexOf.get(event.index) ?? 0, JSON.stringify(event.input ?? {}))];
      case "finish": {
        const frames = [chunk({}, toOpenAIFinishReason(event.reason, toolIndexOf.size > 0))];
        if (options.includeUsage) frames.push(formatSseEvent(undefined, { ...toChunk(options, []), usage: toChatUsage(event.usage) }));
        return [...frames, formatSseEvent(undefined, "[DONE]")];
      }
      case "error": return [formatSseEvent(undefined, toOpenAIErrorBody(event.error))];
      default: return [];
    }
  };
}

function toChunk(options: ChatStreamOptions, choices: ChatCompletionChunk["choices"]): ChatCompletionChunk {
  return {
    id: options.id,
    object: "chat.completion.chunk",
    created: options.created,
    model: options.model,
    system_fingerprint: SYSTEM_FINGERPRINT,
    choices,
    // With include_usage every earlier chunk says usage:null; without it, no usage key at all
    // (https://platform.openai.com/docs/api-reference/chat/create#chat-create-stream_options).
    ...(options.includeUsage ? { usage: null } : {}),
  };
}
