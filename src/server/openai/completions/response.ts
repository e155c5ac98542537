/**
 * Engine results/events → text_completion objects and chunks
 * (https://platform.openai.com/docs/api-reference/completions/object). Choices come one per generation, `n` to a
 * prompt in prompt order; an echoed prompt (from the start event) leads its choice's text and logprobs.
 */
import type { ChatResult } from "../../engine/collect.js";
import { toEngineError } from "../../engine/errors.js";
import type { GenerationEvent, PromptTokenLogprob, Usage } from "../../engine/events.js";
import { sequenceChoices, sumChoiceUsage } from "./choices.js";
import { toOpenAIErrorBody } from "./errors.js";
import { toOpenAIFinishReason, type OpenAIFinishReason } from "./finish-reason.js";
import { SYSTEM_FINGERPRINT, type ResponseMeta } from "./response.js";
import { formatSseEvent } from "../sse.js";
import { toChatUsage, type ChatUsage } from "./usage.js";

/** How the legacy completion is shaped besides the events. */
export interface CompletionOptions extends ResponseMeta {
  /** Whether logprobs were requested (then each choice carries them, else null). */
  logprobs: boolean;
  includeUsage: boolean;
  /** Choices per prompt (`n`): usage counts each prompt once. */
  perPrompt: number;
}

/** OpenAI's legacy logprobs object: parallel arrays per token; an echoed prompt's first token has no logprob (null). */
export interface CompletionLogprobs {
  tokens: string[];
  token_logprobs: Array<number | null>;
  top_logprobs: Array<Record<string, number> | null>;
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

/** Builds the non-streaming text_completion body from the collected generations, in choice order. */
export function toTextCompletion(results: ChatResult[], options: CompletionOptions): TextCompletion {
  return {
    ...envelope(options, results.map((result, index) => {
      const prefix = result.echo?.text ?? "";
      const text = result.blocks.flatMap((block) => (block.type === "text" ? [block.text] : [])).join("");
      const tokens = [...(result.echo?.logprobs ?? []), ...result.blocks.flatMap((block) => (block.type === "text" ? block.logprobs ?? [] : []))];
      return {
        text: prefix + text,
        index,
        logprobs: options.logprobs ? toLogprobs(tokens, 0) : null,
        // Legacy completions have no tool calls; "stop" | "length" only.
        finish_reason: toOpenAIFinishReason(result.finishReason, false),
      };
    })),
    usage: toChatUsage(sumChoiceUsage(results.map((result) => result.usage), options.perPrompt)),
  };
}

/** Encodes the generations (one after another) as text_completion chunks, the optional usage chunk, then `data: [DONE]`. */
export async function* encodeCompletionStream(choices: Array<() => AsyncIterable<GenerationEvent>>, options: CompletionOptions): AsyncGenerator<string> {
  const offsets = choices.map(() => 0);
  const usages: Usage[] = [];
  const chunk = (index: number, text: string, logprobs: PromptTokenLogprob[] | undefined, finishReason: OpenAIFinishReason | null = null): string => {
    const choice: CompletionChoice = { text, index, logprobs: options.logprobs ? toLogprobs(logprobs ?? [], offsets[index]!) : null, finish_reason: finishReason };
    offsets[index]! += text.length;
    return formatSseEvent(undefined, withStreamUsage(envelope(options, [choice]), options));
  };
  for await (const { choice, event } of guardEvents(sequenceChoices(choices))) {
    if (event.type === "start" && event.echo) yield chunk(choice, event.echo.text, event.echo.logprobs);
    if (event.type === "text-delta" && event.text) yield chunk(choice, event.text, event.logprobs);
    if (event.type === "error") {
      yield formatSseEvent(undefined, toOpenAIErrorBody(event.error));
      return;
    }
    if (event.type !== "finish") continue;
    usages.push(event.usage);
    yield chunk(choice, "", [], toOpenAIFinishReason(event.reason, false));
  }
  if (options.includeUsage) yield formatSseEvent(undefined, { ...envelope(options, []), usage: toChatUsage(sumChoiceUsage(usages, options.perPrompt)) });
  yield formatSseEvent(undefined, "[DONE]");
}

/** Turns a failure outside the engine's own error events into one, so the stream still ends in-band. */
async function* guardEvents(events: AsyncIterable<{ choice: number; event: GenerationEvent }>): AsyncGenerator<{ choice: number; event: GenerationEvent }> {
  try {
    yield* events;
  } catch (error) {
    yield { choice: 0, event: { type: "error", error: toEngineError(error) } };
  }
}

/** Parallel arrays as OpenAI writes them; `text_offset` counts characters from the start of the returned text. */
export function toLogprobs(tokens: PromptTokenLogprob[], startOffset: number): CompletionLogprobs {
  const result: CompletionLogprobs = { tokens: [], token_logprobs: [], top_logprobs: [], text_offset: [] };
  let offset = startOffset;
  for (const token of tokens) {
    result.tokens.push(token.token);
    result.token_logprobs.push(token.logprob);
    result.top_logprobs.push(token.top && Object.fromEntries(token.top.map((top) => [top.token, top.logprob])));
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
