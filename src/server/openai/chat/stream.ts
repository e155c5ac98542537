/**
 * GenerationEvents → chat.completion.chunk SSE frames
 * (https://platform.openai.com/docs/api-reference/chat-streaming). A short fold per choice: a role chunk first, one
 * delta per text/reasoning/tool-call fragment (never content and tool_calls together), one finish chunk; after the
 * last choice the include_usage chunk with empty choices, then `data: [DONE]`.
 */
import type { GenerationEvent, Usage } from "../../../engine/index.js";
import { formatSseComment, formatSseEvent } from "../../sse.js";
import { guardStream } from "../../stream-guard.js";
import { mapStream } from "../../../lib/map-stream.js";
import { sequenceChoices, sumChoiceUsage } from "../wire/choices.js";
import { toOpenAIErrorFrames } from "../wire/errors.js";
import { toOpenAIFinishReason, type OpenAIFinishReason } from "../wire/finish-reason.js";
import { toChatLogprobs, type ChatLogprobs } from "../wire/logprobs.js";
import { SYSTEM_FINGERPRINT, toCallId, type ResponseMeta } from "../wire/response-meta.js";
import { toChatUsage, type ChatUsage } from "../wire/usage.js";

/** What shapes the stream besides the events. */
export interface ChatStreamOptions extends ResponseMeta {
  /** `stream_options.include_usage`: usage:null on every chunk, then one usage chunk with choices []. */
  includeUsage: boolean;
  /** Told which choice is open, to make the stream's heartbeats. */
  keepAlive?: ChatKeepAlive;
}

/**
 * The heartbeat of a chat stream. While a choice is open (from its role chunk to its finish) it is a chunk with an
 * empty delta for that choice: SDK clients hand that over as a chunk, so an agent whose stream timer counts chunks
 * (Qwen Code's idle guard) sees the stream alive while a long prompt is evaluated, where a comment line, which the
 * SDKs drop, would leave it silent. Between choices it is a comment.
 */
export class ChatKeepAlive {
  private open: number | undefined;

  constructor(private readonly options: Omit<ChatStreamOptions, "keepAlive">) {}

  /** Follows choice `choice`'s events. */
  track(choice: number, event: GenerationEvent): void {
    if (event.type === "start") this.open = choice;
    else if (event.type === "finish" || event.type === "error") this.open = undefined;
  }

  frame(): string {
    if (this.open === undefined) return formatSseComment("keep-alive");
    return formatSseEvent(undefined, toChunk(this.options, [{ index: this.open, delta: {}, logprobs: null, finish_reason: null }]));
  }
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
  choices: Array<{ index: number; delta: ChunkDelta; logprobs: ChatLogprobs | null; finish_reason: OpenAIFinishReason | null }>;
  usage?: ChatUsage | null;
}

/**
 * Encodes the choices' event streams, run one after another, as SSE frames (strings ending in a blank line); an
 * error ends the whole stream in-band.
 */
export function encodeChatCompletionStream(choices: Array<() => AsyncIterable<GenerationEvent>>, options: ChatStreamOptions): AsyncIterable<string> {
  return guardStream(encodeChoices(choices, options), toOpenAIErrorFrames);
}

/** Each event's frames as one string (one write per event), then the usage chunk and `[DONE]`; an error ends it. */
function encodeChoices(choices: Array<() => AsyncIterable<GenerationEvent>>, options: ChatStreamOptions): AsyncIterable<string> {
  const encoders = choices.map((_, index) => createChatStreamEncoder(options, index));
  const usages: Usage[] = [];
  return mapStream(sequenceChoices(choices), {
    map: ({ choice, event }, stop) => {
      options.keepAlive?.track(choice, event);
      if (event.type === "error") stop();
      if (event.type === "finish") usages.push(event.usage);
      return encoders[choice]!(event).join("") || undefined;
    },
    end: () => {
      const usage = options.includeUsage ? formatSseEvent(undefined, { ...toChunk(options, []), usage: toChatUsage(sumChoiceUsage(usages, choices.length)) }) : "";
      return usage + formatSseEvent(undefined, "[DONE]");
    },
  });
}

/** A stateful fold for choice `index`: each event → the frames it produces (often none), up to its finish chunk. */
export function createChatStreamEncoder(options: ChatStreamOptions, index = 0): (event: GenerationEvent) => string[] {
  const toolIndexOf = new Map<number, number>();
  const argumentsSent = new Set<number>();
  const chunk = (delta: ChunkDelta, finishReason: OpenAIFinishReason | null = null, logprobs: ChatLogprobs | null = null): string =>
    formatSseEvent(undefined, toChunk(options, [{ index, delta, logprobs, finish_reason: finishReason }]));
  const toolDelta = (index: number, json: string): string => chunk({ tool_calls: [{ index, function: { arguments: json } }] });

  return (event) => {
    switch (event.type) {
      case "start": return [chunk({ role: "assistant", content: "", refusal: null })];
      case "text-delta": return event.text ? [chunk({ content: event.text }, null, options.logprobs ? toChatLogprobs(event.logprobs ?? []) : null)] : [];
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
      case "finish": return [chunk({}, toOpenAIFinishReason(event.reason, toolIndexOf.size > 0))];
      case "error": return toOpenAIErrorFrames(event.error);
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
