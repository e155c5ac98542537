/** EmbeddingResult → OpenAI's embedding list (https://platform.openai.com/docs/api-reference/embeddings/object). */
import { setImmediate as nextTurn } from "node:timers/promises";
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

/**
 * The list as a JSON response written one embedding at a time, with a turn of the event loop between them: 2,048
 * vectors of 1,536 floats are 66 MB of JSON, about two seconds in one JSON.stringify, during which no other client
 * would be answered.
 */
export function embeddingListResponse(list: EmbeddingList): Response {
  const { object, data, ...rest } = list;
  const tail = JSON.stringify(rest).slice(1);
  const chunks = [`{"object":${JSON.stringify(object)},"data":[`, ...data.map((item, i) => () => `${i ? "," : ""}${JSON.stringify(item)}`), `],${tail}`];
  const encoder = new TextEncoder();
  let next = 0;
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      await nextTurn();
      const chunk = chunks[next++]!;
      controller.enqueue(encoder.encode(typeof chunk === "string" ? chunk : chunk()));
      if (next === chunks.length) controller.close();
    },
  });
  return new Response(body, { headers: { "content-type": "application/json" } });
}

function toBase64(vector: number[]): string {
  const bytes = Buffer.alloc(vector.length * 4);
  vector.forEach((value, i) => bytes.writeFloatLE(value, i * 4));
  return bytes.toString("base64");
}
