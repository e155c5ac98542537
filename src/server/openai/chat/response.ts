/**
 * ChatResult → the non-streaming chat.completion object (https://platform.openai.com/docs/api-reference/chat/object).
 */
import type { ChatResult } from "../../../engine/index.js";
import { sumChoiceUsage } from "../wire/choices.js";
import { toOpenAIFinishReason, type OpenAIFinishReason } from "../wire/finish-reason.js";
import { toChatLogprobs, type ChatLogprobs } from "../wire/logprobs.js";
import { argumentsText, SYSTEM_FINGERPRINT, toCallId, type ResponseMeta } from "../wire/response-meta.js";
import { toChatUsage, type ChatUsage } from "../wire/usage.js";

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
    logprobs: ChatLogprobs | null;
    finish_reason: OpenAIFinishReason;
  }>;
  usage: ChatUsage;
}

/** Builds the chat.completion body from the collected results, one choice each (`n`). */
export function toChatCompletion(results: ChatResult[], meta: ResponseMeta): ChatCompletion {
  return {
    id: meta.id,
    object: "chat.completion",
    created: meta.created,
    model: meta.model,
    system_fingerprint: SYSTEM_FINGERPRINT,
    choices: results.map((result, index) => toChoice(result, index, meta)),
    usage: toChatUsage(sumChoiceUsage(results.map((result) => result.usage), results.length)),
  };
}

function toChoice(result: ChatResult, index: number, meta: ResponseMeta): ChatCompletion["choices"][number] {
  const text = result.blocks.flatMap((block) => (block.type === "text" ? [block.text] : [])).join("");
  const reasoning = result.blocks.flatMap((block) => (block.type === "reasoning" ? [block.text] : [])).join("");
  const toolCalls = result.blocks.flatMap((block): WireToolCall[] => block.type === "tool-call"
    ? [{ id: toCallId(block.id), type: "function", function: { name: block.name, arguments: argumentsText(block.json, block.input) } }]
    : []);
  const logprobs = result.blocks.flatMap((block) => (block.type === "text" ? block.logprobs ?? [] : []));
  return {
    index,
    message: {
      role: "assistant",
      // OpenAI sends null content beside tool calls; "" when the model said nothing at all.
      content: text === "" && toolCalls.length ? null : text,
      refusal: null,
      ...(reasoning ? { reasoning_content: reasoning } : {}),
      ...(toolCalls.length ? { tool_calls: toolCalls } : {}),
    },
    logprobs: meta.logprobs ? toChatLogprobs(logprobs) : null,
    finish_reason: toOpenAIFinishReason(result.finishReason, toolCalls.length > 0),
  };
}
