/**
 * ChatResult → the non-streaming chat.completion object (https://platform.openai.com/docs/api-reference/chat/object).
 */
import type { ChatResult } from "../../engine/collect.js";
import { toOpenAIFinishReason, type OpenAIFinishReason } from "./finish-reason.js";
import { toChatUsage, type ChatUsage } from "./usage.js";

/** Identity of one response: the same id/created/model go on every chunk of a stream. */
export interface ResponseMeta {
  id: string;
  /** Unix seconds. */
  created: number;
  /** The model id as the client sent it (OpenAI echoes the request's model). */
  model: string;
}

/** Constant fingerprint: kiln has no deployment revisions to tell apart. */
export const SYSTEM_FINGERPRINT = "fp_kiln";

/** One tool call as OpenAI writes it: arguments are a JSON string. */
export interface WireToolCall {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}

export interface ChatCompletion {
  id: string;
  object: "chat.completion";
  created: number;
  model: string;
  system_fingerprint: string;
  choices: Array<{
    index: number;
    message: {
      role: "assistant";
      content: string | null;
      refusal: null;
      reasoning_content?: string;
      tool_calls?: WireToolCall[];
    };
    logprobs: null;
    finish_reason: OpenAIFinishReason;
  }>;
  usage: ChatUsage;
}

/** Engine tool-call ids carry no prefix; OpenAI clients expect `call_…`. */
export function toCallId(id: string): string {
  return `call_${id}`;
}

/** Builds the chat.completion body from a collected result. */
export function toChatCompletion(result: ChatResult, meta: ResponseMeta): ChatCompletion {
  const text = result.blocks.flatMap((block) => (block.type === "text" ? [block.text] : [])).join("");
  const reasoning = result.blocks.flatMap((block) => (block.type === "reasoning" ? [block.text] : [])).join("");
  const toolCalls = result.blocks.flatMap((block): WireToolCall[] => block.type === "tool-call"
    ? [{ id: toCallId(block.id), type: "function", function: { name: block.name, arguments: argumentsText(block.json, block.input) } }]
    : []);
  return {
    id: meta.id,
    object: "chat.completion",
    created: meta.created,
    model: meta.model,
    system_fingerprint: SYSTEM_FINGERPRINT,
    choices: [{
      index: 0,
      message: {
        role: "assistant",
        // OpenAI sends null content beside tool calls; "" when the model said nothing at all.
        content: text === "" && toolCalls.length ? null : text,
        refusal: null,
        ...(reasoning ? { reasoning_content: reasoning } : {}),
        ...(toolCalls.length ? { tool_calls: toolCalls } : {}),
      },
      logprobs: null,
      finish_reason: toOpenAIFinishReason(result.finishReason, toolCalls.length > 0),
    }],
    usage: toChatUsage(result.usage),
  };
}

/** The streamed JSON text when there was any, else the parsed input re-serialized ("{}" for no arguments). */
export function argumentsText(json: string, input: unknown): string {
  return json.trim() ? json : JSON.stringify(input ?? {});
}
