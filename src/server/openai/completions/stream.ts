/**
 * Generations → text_completion chunks (https://platform.openai.com/docs/api-reference/completions/object): text
 * deltas (after an echoed prompt) per choice, a finish chunk each, the include_usage chunk, then `data: [DONE]`.
 */
import type { GenerationEvent, Usage, PromptTokenLogprob } from "../../../engine/index.js";
import { formatSseEvent } from "../../sse.js";
import { guardStream } from "../../stream-guard.js";
import { mapStream } from "../../../lib/map-stream.js";
import { sequenceChoices, sumChoiceUsage } from "../wire/choices.js";
import { toOpenAIErrorFrames } from "../wire/errors.js";
import { toOpenAIFinishReason, type OpenAIFinishReason } from "../wire/finish-reason.js";
import { toChatUsage } from "../wire/usage.js";
import { toCompletionEnvelope, toLogprobs, type CompletionChoice, type CompletionOptions, type TextCompletion } from "./response.js";

/**
 * Encodes the generations (one after another) as text_completion chunks, the optional usage chunk, then
 * `data: [DONE]`; an error ends the whole stream in-band.
 */
export function encodeCompletionStream(choices: Array<() => AsyncIterable<GenerationEvent>>, options: CompletionOptions): AsyncIterable<string> {
  return guardStream(encodeChoices(choices, options), toOpenAIErrorFrames);
}

/** Each event's chunk (an echo, a text delta, a finish), then the usage chunk and `[DONE]`; an error ends it. */
function encodeChoices(choices: Array<() => AsyncIterable<GenerationEvent>>, options: CompletionOptions): AsyncIterable<string> {
  const offsets = choices.map(() => 0);
  const usages: Usage[] = [];
  const chunk = (index: number, text: string, logprobs: PromptTokenLogprob[] | undefined, finishReason: OpenAIFinishReason | null = null): string => {
    const choice: CompletionChoice = { text, index, logprobs: options.logprobs ? toLogprobs(logprobs ?? [], offsets[index]!) : null, finish_reason: finishReason };
    offsets[index]! += text.length;
    return formatSseEvent(undefined, withStreamUsage(toCompletionEnvelope(options, [choice]), options));
  };
  return mapStream(sequenceChoices(choices), {
    map: ({ choice, event }, stop) => {
      if (event.type === "start" && event.echo) return chunk(choice, event.echo.text, event.echo.logprobs);
      if (event.type === "text-delta" && event.text) return chunk(choice, event.text, event.logprobs);
      if (event.type === "error") {
        stop();
        return toOpenAIErrorFrames(event.error).join("");
      }
      if (event.type !== "finish") return undefined;
      usages.push(event.usage);
      return chunk(choice, "", [], toOpenAIFinishReason(event.reason, false));
    },
    end: () => {
      const usage = options.includeUsage ? formatSseEvent(undefined, { ...toCompletionEnvelope(options, []), usage: toChatUsage(sumChoiceUsage(usages, options.perPrompt)) }) : "";
      return usage + formatSseEvent(undefined, "[DONE]");
    },
  });
}

function withStreamUsage(completion: TextCompletion, options: CompletionOptions): TextCompletion {
  return options.includeUsage ? { ...completion, usage: null } : completion;
}
