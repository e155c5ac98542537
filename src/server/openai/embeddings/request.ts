/**
 * POST /v1/embeddings body → EmbeddingRequest (https://platform.openai.com/docs/api-reference/embeddings/create).
 * `user` is accepted and ignored, as the other routes ignore it.
 */
import * as v from "valibot";
import { EngineError, type EmbeddingRequest } from "../../../engine/index.js";
import { promptInputSchema, toPromptItems } from "../wire/prompt-input.js";
import { parseBody, positiveIntSchema } from "../wire/schema.js";

/** OpenAI's limit on inputs per request. */
export const MAX_EMBEDDING_INPUTS = 2048;

/** How the vectors travel: JSON numbers, or the little-endian float32 bytes in base64 (the SDKs' default). */
export type EncodingFormat = "float" | "base64";

const embeddingRequestSchema = v.object({
  model: v.pipe(v.string(), v.minLength(1, "Expected a model id")),
  input: promptInputSchema,
  encoding_format: v.nullish(v.picklist(["float", "base64"], "Expected 'float' or 'base64'")),
  dimensions: v.nullish(positiveIntSchema),
  user: v.nullish(v.string()),
});

/** The translated request plus the wire option that shapes the response. */
export interface EmbeddingCall {
  request: EmbeddingRequest;
  encodingFormat: EncodingFormat;
}

/** Validates and translates an embeddings body. Throws EngineError invalid_request naming the field. */
export function fromEmbeddingRequest(body: unknown): EmbeddingCall {
  const wire = parseBody(embeddingRequestSchema, body);
  const inputs = toPromptItems(wire.input);
  if (inputs.length > MAX_EMBEDDING_INPUTS) {
    throw new EngineError("invalid_request", `Invalid 'input': ${inputs.length} inputs exceed the limit of ${MAX_EMBEDDING_INPUTS} per request`, { param: "input" });
  }
  const request: EmbeddingRequest = { model: wire.model, inputs, ...(wire.dimensions != null ? { dimensions: wire.dimensions } : {}) };
  return { request, encodingFormat: wire.encoding_format ?? "float" };
}
