/**
 * ChatResult → the non-streaming chat.completion object (https://platform.openai.com/docs/api-reference/chat/object).
 */
import type { ChatResult } from "../../engine/collect.js";
import type { TokenLogprob } from "../../engine/events.js";
import { sumChoiceUsage } from "./choices.js";
import { toOpenAIFinishReason, type OpenAIFinishReason } from "./finish-reason.js";
import { toChatUsage, type ChatUsage } from "./usage.js";
import { toToolCallId } from "../../lib/ids.js";

/** Identity of one response: the same id/created/model go on every chunk of a stream. */
export interface ResponseMeta {
  id: string;
  /** Unix seconds. */
  created: number;
  /** The model id as the client sent it (OpenAI echoes the request's model). */
  model: string;
  /** Whether logprobs were asked for: then each choice carries them, else `logprobs: null`. */
  logprobs?: boolean;
}

/** One token's logprob as chat completions write it (https://platform.openai.com/docs/api-reference/chat/object). */
export interface ChatTokenLogprob {
  token: string;
  logprob: number;
  bytes: number[];
  top_logprobs: Array<{ token: string; logprob: number; bytes: number[] }>;
}

/** A choice's `logprobs`: its content tokens (kiln never refuses, so `refusal` is null). */
export interface ChatLogprobs { content: ChatTokenLogprob[]; refusal: null }

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
    logprobs: ChatLogprobs | null;
    finish_reason: OpenAIFinishReason;
  }>;
  usage: ChatUsage;
}

/** OpenAI clients expect `call_…` ids. */
export function toCallId(id: string): string {
  return toToolCallId("call_", id);
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

/** Chat logprobs of generated tokens, with each token's UTF-8 bytes as OpenAI gives them. */
export function toChatLogprobs(tokens: TokenLogprob[]): ChatLogprobs {
  const bytes = (token: string) => [...new TextEncoder().encode(token)];
  return {
    content: tokens.map((token) => ({
      token: token.token,
      logprob: token.logprob,
      bytes: bytes(token.token),
      top_logprobs: token.top.map((top) => ({ token: top.token, logprob: top.logprob, bytes: bytes(top.token) })),
    })),
    refusal: null,
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

/** The streamed JSON text when there was any, else the parsed input re-serialized ("{}" for no arguments). */
export function argumentsText(json: string, input: unknown): string {
  return json.trim() ? json : JSON.stringify(input ?? {});
}
