import { describe, expect, it } from "vitest";
import { parseGgufHeader, readGgufHeader } from "../../../../models/gguf.js";
import { encodeGguf } from "../../../../models/gguf-write.js";
import { GgufType } from "../../../../models/gguf.js";
import { realModelPath } from "../../../../../test/helpers/real-model.js";
import { TINY_VOCABULARY_SIZE, tinyGgufBytes } from "../../../../../test/helpers/tiny-gguf.js";
import { readLlamaConfig } from "./llama-config.js";

describe("readLlamaConfig", () => {
  it("reads the tiny fixture's shape, untied and tied", () => {
    const config = readLlamaConfig(parseGgufHeader(tinyGgufBytes(1)));
    expect(config).toMatchObject({
      architecture: "llama", layers: 2, embedding: 64, heads: 4, kvHeads: 2, headDim: 16, feedForward: 128,
      vocabSize: TINY_VOCABULARY_SIZE, ropeTheta: 10000, ropeDim: 16, ropeScale: 1, tiedEmbeddings: false, contextLength: 512,
    });
    expect(config.rmsEpsilon).toBeCloseTo(1e-5, 10);
    expect(readLlamaConfig(parseGgufHeader(tinyGgufBytes(1, { tied: true, shape: { layers: 3 } })))).toMatchObject({ tiedEmbeddings: true, layers: 3 });
  });

  it("reads the real default model (SmolLM2-135M: GQA 9/3, tied embeddings, θ = 100000)", async () => {
    const config = readLlamaConfig(await readGgufHeader(realModelPath()));
    expect(config).toMatchObject({
      layers: 30, embedding: 576, heads: 9, kvHeads: 3, headDim: 64, feedForward: 1536, vocabSize: 49152,
      ropeTheta: 100000, tiedEmbeddings: true, contextLength: 8192,
    });
  });

  it("refuses another architecture and names a missing key", () => {
    const other = encodeGguf([{ key: "general.architecture", type: GgufType.STRING, value: "qwen2" }], []);
    expect(() => readLlamaConfig(parseGgufHeader(other))).toThrow(/architecture is "qwen2"/);
    const bare = encodeGguf([{ key: "general.architecture", type: GgufType.STRING, value: "llama" }], []);
    expect(() => readLlamaConfig(parseGgufHeader(bare))).toThrow(/lacks the metadata key llama\.embedding_length/);
  });
});
