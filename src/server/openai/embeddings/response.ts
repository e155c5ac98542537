/** EmbeddingResult → OpenAI's embedding list (https://platform.openai.com/docs/api-reference/embeddings/object). */
import type { EmbeddingResult } from "../../../engine/index.js";
import type { EncodingFormat } from "./request.js";

export interface EmbeddingList {
  object: "list";
  data: Array<{ object: "embedding"; index: number; embedding: number[] | string }>;
  model: string;
  usage: { prompt_tokens: number; total_tokens: number };
}

/** The list in the request's order; base64 carries the float32 values little-endian, as OpenAI sends them. */
export function toEmbeddingList(result: EmbeddingResult, model: string, format: EncodingFormat): EmbeddingList {
  return {
    object: "list",
    data: result.vectors.map((vector, index) => ({ object: "embedding", index, embedding: format === "base64" ? toBase64(vector) : vector })),
    model,
    usage: { prompt_tokens: result.inputTokens, total_tokens: result.inputTokens },
  };
}

function toBase64(vector: number[]): string {
  const bytes = Buffer.alloc(vector.length * 4);
  vector.forEach((value, i) => bytes.writeFloatLE(value, i * 4));
  return bytes.toString("base64");
}
