import { describe, expect, it } from "vitest";
import { EngineError } from "../../../engine/index.js";
import { fromEmbeddingRequest, MAX_EMBEDDING_INPUTS } from "./request.js";
import { embeddingListResponse, toEmbeddingList } from "./response.js";

describe("fromEmbeddingRequest", () => {
  it("takes a string, strings, token ids or lists of token ids as inputs in order, floats by default", () => {
    expect(fromEmbeddingRequest({ model: "m", input: "a" })).toEqual({ request: { model: "m", inputs: ["a"] }, encodingFormat: "float" });
    expect(fromEmbeddingRequest({ model: "m", input: ["a", "b"] }).request.inputs).toEqual(["a", "b"]);
    expect(fromEmbeddingRequest({ model: "m", input: [1, 2] }).request.inputs).toEqual([[1, 2]]);
    expect(fromEmbeddingRequest({ model: "m", input: [[1], [2, 3]] }).request.inputs).toEqual([[1], [2, 3]]);
  });

  it("passes dimensions on, and takes base64, null fields and an ignored user", () => {
    const call = fromEmbeddingRequest({ model: "m", input: "a", dimensions: 256, encoding_format: "base64", user: "someone" });
    expect(call).toEqual({ request: { model: "m", inputs: ["a"], dimensions: 256 }, encodingFormat: "base64" });
    expect(fromEmbeddingRequest({ model: "m", input: "a", dimensions: null, encoding_format: null, user: null })).toEqual({ request: { model: "m", inputs: ["a"] }, encodingFormat: "float" });
  });

  it.each([
    [{ input: "a" }, "model"],
    [{ model: "m" }, "input"],
    [{ model: "m", input: [] }, "input"],
    [{ model: "m", input: [[]] }, "input"],
    [{ model: "m", input: [1.5] }, "input"],
    [{ model: "m", input: ["a", 1] }, "input"],
    [{ model: "m", input: "a", dimensions: 0 }, "dimensions"],
    [{ model: "m", input: "a", encoding_format: "int8" }, "encoding_format"],
    [{ model: "m", input: Array.from({ length: MAX_EMBEDDING_INPUTS + 1 }, () => "a") }, "input"],
  ])("refuses %j naming %s", (body, param) => {
    let thrown: unknown;
    try {
      fromEmbeddingRequest(body);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(EngineError);
    expect(thrown).toMatchObject({ code: "invalid_request", details: { param: expect.stringMatching(new RegExp(`^${param}`)) } });
  });
});

describe("toEmbeddingList", () => {
  const result = { model: "resolved", vectors: [[0.6, -0.8], [1, 0]], inputTokens: 7 };

  it("lists the vectors in order with the usage OpenAI reports", () => {
    expect(toEmbeddingList(result, "asked", "float")).toEqual({
      object: "list",
      data: [{ object: "embedding", index: 0, embedding: [0.6, -0.8] }, { object: "embedding", index: 1, embedding: [1, 0] }],
      model: "asked",
      usage: { prompt_tokens: 7, total_tokens: 7 },
    });
  });

  it("writes base64 as little-endian float32", () => {
    const [first] = toEmbeddingList(result, "asked", "base64").data;
    const bytes = Buffer.from(first!.embedding as string, "base64");
    expect(bytes).toHaveLength(8);
    expect([bytes.readFloatLE(0), bytes.readFloatLE(4)]).toEqual([Math.fround(0.6), Math.fround(-0.8)]);
  });

  it("writes the JSON one embedding at a time, letting other work run between them", async () => {
    const list = toEmbeddingList({ ...result, vectors: Array.from({ length: 50 }, (_, i) => [i + 1, -i - 1]) }, "asked", "float");
    let turns = 0;
    const counting = setInterval(() => void (turns += 1), 0);
    const response = embeddingListResponse(list);
    const text = await response.text();
    clearInterval(counting);
    expect(response.headers.get("content-type")).toBe("application/json");
    expect(JSON.parse(text)).toEqual(list);
    expect(Object.keys(JSON.parse(text))).toEqual(["object", "data", "model", "usage"]);
    expect(turns).toBeGreaterThan(0);
  });
});
