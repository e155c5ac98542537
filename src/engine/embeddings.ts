/**
 * Embeddings in the internal language: a request of one or more inputs (text or token ids) for one model, and
 * the vectors that come back. What every backend that embeds shares lives here too: the input checks made before
 * any work and the unit length that makes a dot product the cosine similarity clients expect.
 */
import { EngineError } from "../errors/engine-error.js";

/** Vectors for `inputs`, in order. */
export interface EmbeddingRequest {
  /** Model name as the client sent it (resolved by the engine; unknown → not_found). */
  model: string;
  /** Texts, or token ids taken as they are (checked against the vocabulary). */
  inputs: Array<string | number[]>;
  /** The length the client wants: local models give only their own; a remote model's upstream decides. */
  dimensions?: number;
}

export interface EmbeddingResult {
  /** The resolved model id. */
  model: string;
  /** One unit-length vector per input, in the request's order. */
  vectors: number[][];
  /** Tokens evaluated over all inputs (with the markers the model adds around each). */
  inputTokens: number;
}

/**
 * Refuses a `dimensions` a local model cannot give: shortening a vector keeps its meaning only for models trained
 * for it (Matryoshka), and the local models kiln serves are not, so only their own length is accepted.
 */
export function checkDimensions(modelId: string, size: number, dimensions: number | undefined): void {
  if (dimensions === undefined || dimensions === size) return;
  throw new EngineError("invalid_request",
    `dimensions: model ${modelId} gives vectors of ${size} dimensions and cannot shorten them; omit dimensions or send ${size}`,
    { param: "dimensions" });
}

/** An empty input has no vector: refused as the client's mistake, naming which one. */
export function checkInputsNotEmpty(inputs: ReadonlyArray<string | number[]>): void {
  const empty = inputs.findIndex((input) => input.length === 0);
  if (empty >= 0) throw new EngineError("invalid_request", `input.${empty}: must not be empty`, { param: `input.${empty}` });
}

/** The vector scaled to length 1 (a zero vector stays zero). */
export function toUnitLength(vector: ArrayLike<number>): number[] {
  let sum = 0;
  for (let i = 0; i < vector.length; i++) sum += vector[i]! * vector[i]!;
  const length = Math.sqrt(sum);
  return Array.from(vector, (x) => (length > 0 ? x / length : 0));
}
