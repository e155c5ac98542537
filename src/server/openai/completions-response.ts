/**
 * Engine results/events → text_completion objects and chunks
 * (https://platform.openai.com/docs/api-reference/completions/object).
 */
import type { ChatResult } from "../../engine/collect.js";
import { toEngineError } from "../../engine/errors.js";
import type { GenerationEvent, TokenLogprob } from "../../engine/events.js";
import { toOpenAIErrorBody } from "./errors.js";
import { toOpenAIFinishReason, type OpenAIFinishReason } from "./finish-reason.js";
import { SYSTEM_FINGERPRINT, type ResponseMeta } from "./response.js";
import { formatSseEvent } from "../sse.js";
import { toChatUsage, type ChatUsage } from "./usage.js";

/** How the legacy completion is shaped besides the events. */
export interface CompletionOptions extends ResponseMeta {
  /** The prompt, when `echo` asked for it to lead the text; undefined otherwise. */
  echoPrompt?: string;
  /** Whether logprobs were requested (then each choice carries them, else null). */
  logprobs: boolean;
  includeUsage: boolean;
}

/** OpenAI's legacy logprobs object: parallel arrays per generated token. */
export interface CompletionLogprobs {
  tokens: string[];
  token_logprobs: number[];
  top_logprobs: Array<Record<string, number>>;
  text_offset: number[];
}

interface CompletionChoice { text: string; index: number; logprobs: CompletionLogprobs | null; finish_reason: OpenAIFinishReason | null }

export interface TextCompletion {
  id: string;
  object: "text_completion";
  created: number;
  model: string;
  system_fingerprint: string;
  choices: CompletionChoice[];
  usage?: ChatUsage | null;
}

/** Builds the non-streaming text_completion body. */
export function toTextCompletion(result: ChatResult, options: CompletionOptions): TextCompletion {
  const prefix = options.echoPrompt ?? "";
  const text = result.blocks.flatMap((block) => (block.type === "text" ? [block.text] : [])).join("");
  const tokens = result.blocks.flatMap((block) => (block.type === "text" ? block.logprobs ?? [] : []));
  return {
    ...envelope(options, [{
      text: prefix + text,
      index: 0,
      logprobs: options.logprobs ? toLogprobs(tokens, prefix.length) : null,
      // Legacy completions have no tool calls; "stop" | "length" only.
      finish_reason: toOpenAIFinishReason(result.finishReason, false),
    }]),
    usage: toChatUsage(result.usage),
  };
}

/** Encodes the event stream as text_completion chunks, the optional usage chunk, then `data: [DONE]`. */
export async function* encodeCompletionStream(events: AsyncIterable<GenerationEvent>, options: CompletionOptions): AsyncGenerator<string> {
  let offset = 0;
  const chunk = (text: string, logprobs: TokenLogprob[] | undefined, finishReason: OpenAIFinishReason | null = null): string => {
    const choice: CompletionChoice = { text, index: 0, logprobs: options.logprobs ? toLogprobs(logprobs ?? [], offset) : null, finish_reason: finishReason };
    offset += text.length;
    return formatSseEvent(undefined, withStreamUsage(envelope(options, [choice]), options));
  };
  for await (const event of guardEvents(events)) {
    if (event.type === "start" && options.echoPrompt) yield chunk(options.echoPrompt, []);
    if (event.type === "text-delta" && event.text) yield chunk(event.text, event.logprobs);
    if (event.type === "error") yield formatSseEvent(undefined, toOpenAIErrorBody(event.error));
    if (event.type !== "finish") continue;
    yield chunk("", [], toOpenAIFinishReason(event.reason, false));
    if (options.includeUsage) yield formatSseEvent(undefined, { ...envelope(options, []), usage: toChatUsage(event.usage) });
    yield formatSseEvent(undefined, "[DONE]");
  }
}

/** Turns a failure outside the engine's own error events into one, so the stream still ends in-band. */
async function* guardEvents(events: AsyncIterable<GenerationEvent>): AsyncGenerator<GenerationEvent> {
  try {
    yield* events;
  } catch (error) {
    yield { type: "error", error: toEngineError(error) };
  }
}

/** Parallel arrays as OpenAI writes them; `text_offset` counts characters from the start of the returned text. */
export function toLogprobs(tokens: TokenLogprob[], startOffset: number): CompletionLogprobs {
  const result: CompletionLogprobs = { tokens: [], token_logprobs: [], top_logprobs: [], text_offset: [] };
  let offset = startOffset;
  for (const token of tokens) {
    result.tokens.push(token.token);
    result.token_logprobs.push(token.logprob);
    result.top_logprobs.push(Object.fromEntries(token.top.map((top) => [top.token, top.logprob])));
    result.text_offset.push(offset);
    offset += token.token.length;
  }
  return result;
}

function envelope(options: CompletionOptions, choices: CompletionChoice[]): TextCompletion {
  return { id: options.id, object: "text_completion", created: options.created, model: options.model, system_fingerprint: SYSTEM_FINGERPRINT, choices };
}

function withStreamUsage(completion: TextCompletion, options: CompletionOptions): TextCompletion {
  return options.includeUsage ? { ...completion, usage: null } : completion;
}
