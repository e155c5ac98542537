/**
 * POST /v1/completions body → CompletionRequest (https://platform.openai.com/docs/api-reference/completions/create).
 * The prompt goes to the engine verbatim: autocomplete clients render their own FIM prompts.
 */
import * as v from "valibot";
import { EngineError, type CompletionRequest } from "../../../engine/index.js";
import { promptInputSchema, toPromptItems } from "../wire/prompt-input.js";
import { optional, toIncludeUsage, toSampling, toStop } from "../wire/request-fields.js";
import { parseBody, positiveIntSchema, rangeSchema, samplingFields } from "../wire/schema.js";

/**
 * OpenAI's default for a missing `max_tokens` on /v1/completions
 * (https://platform.openai.com/docs/api-reference/completions/create#completions-create-max_tokens).
 */
export const DEFAULT_COMPLETION_MAX_TOKENS = 16;

const completionRequestSchema = v.object({
  model: v.pipe(v.string(), v.minLength(1, "Expected a model id")),
  prompt: promptInputSchema,
  suffix: v.nullish(v.string()),
  max_tokens: v.nullish(positiveIntSchema),
  echo: v.nullish(v.boolean()),
  logprobs: v.nullish(rangeSchema(0, 5, true)),
  best_of: v.nullish(v.pipe(v.number(), v.maxValue(1, "kiln generates one choice per request; best_of must be 1"))),
  ...samplingFields,
});

/** The translated requests (one per prompt) plus the wire options that shape the response. */
export interface CompletionCall {
  requests: CompletionRequest[];
  /** Choices per prompt (`n`). */
  n: number;
  stream: boolean;
  includeUsage: boolean;
}

/** Validates and translates a completions body. Throws EngineError invalid_request naming the field. */
export function fromCompletionRequest(body: unknown): CompletionCall {
  const wire = parseBody(completionRequestSchema, body);
  const prompts = toPromptItems(wire.prompt);
  if (!wire.suffix) rejectEmptyPrompt(prompts);
  const requests = prompts.map((prompt): CompletionRequest => ({
    model: wire.model,
    prompt,
    ...optional("suffix", wire.suffix || undefined),
    sampling: toSampling(wire),
    ...optional("stop", toStop(wire.stop)),
    maxTokens: wire.max_tokens ?? DEFAULT_COMPLETION_MAX_TOKENS,
    ...optional("logprobs", wire.logprobs),
    ...(wire.echo === true ? { echo: true } : {}),
  }));
  return { requests, n: wire.n ?? 1, stream: wire.stream === true, includeUsage: toIncludeUsage(wire) };
}

/**
 * An empty text prompt has nothing to continue (with a suffix it is a fill-in at the start of a file). Checked for
 * every prompt before any generation starts: several prompts stream one after another, and a refusal at the
 * engine for a later one could only travel in-band after the earlier prompts' choices.
 */
function rejectEmptyPrompt(prompts: Array<string | number[]>): void {
  const empty = prompts.indexOf("");
  if (empty === -1) return;
  const param = prompts.length > 1 ? `prompt.${empty}` : "prompt";
  throw new EngineError("invalid_request", `Invalid '${param}': must not be empty`, { param });
}
