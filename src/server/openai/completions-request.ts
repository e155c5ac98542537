/**
 * POST /v1/completions body → CompletionRequest (https://platform.openai.com/docs/api-reference/completions/create).
 * The prompt goes to the engine verbatim: autocomplete clients render their own FIM prompts.
 */
import * as v from "valibot";
import type { CompletionRequest } from "../../engine/messages.js";
import { optional, toSampling, toStop } from "./request.js";
import { parseBody, positiveIntSchema, rangeSchema, samplingFields } from "./schema.js";

/**
 * OpenAI's default for a missing `max_tokens` on /v1/completions
 * (https://platform.openai.com/docs/api-reference/completions/create#completions-create-max_tokens).
 */
export const DEFAULT_COMPLETION_MAX_TOKENS = 16;

const promptSchema = v.union([
  v.string(),
  v.pipe(v.array(v.string()), v.length(1, "kiln completes one prompt per request; send a string or an array of one string")),
], "Expected a string (token-id prompts are not supported)");

const completionRequestSchema = v.object({
  model: v.pipe(v.string(), v.minLength(1, "Expected a model id")),
  prompt: promptSchema,
  suffix: v.nullish(v.string()),
  max_tokens: v.nullish(positiveIntSchema),
  echo: v.nullish(v.boolean()),
  logprobs: v.nullish(rangeSchema(0, 5, true)),
  best_of: v.nullish(v.pipe(v.number(), v.maxValue(1, "kiln generates one choice per request; best_of must be 1"))),
  ...samplingFields,
});

/** The translated request plus the wire options that shape the response. */
export interface CompletionCall {
  request: CompletionRequest;
  stream: boolean;
  includeUsage: boolean;
  /** `echo`: the prompt is prepended to the returned text. */
  echo: boolean;
}

/** Validates and translates a completions body. Throws EngineError invalid_request naming the field. */
export function fromCompletionRequest(body: unknown): CompletionCall {
  const wire = parseBody(completionRequestSchema, body);
  const prompt = typeof wire.prompt === "string" ? wire.prompt : wire.prompt[0]!;
  const request: CompletionRequest = {
    model: wire.model,
    prompt,
    ...optional("suffix", wire.suffix || undefined),
    sampling: toSampling(wire),
    ...optional("stop", toStop(wire.stop)),
    maxTokens: wire.max_tokens ?? DEFAULT_COMPLETION_MAX_TOKENS,
    ...optional("logprobs", wire.logprobs ?? undefined),
  };
  return { request, stream: wire.stream === true, includeUsage: wire.stream_options?.include_usage === true, echo: wire.echo === true };
}
