import { existsSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parseGgufHeader, readGgufHeader } from "../../../../gguf/read-gguf-header.js";
import { encodeGguf } from "../../../../gguf/encode-gguf.js";
import { GgufType } from "../../../../gguf/read-gguf-header.js";
import { coderModelPath, realModelPath } from "../../../../../test/helpers/real-model.js";
import { TINY_VOCABULARY_SIZE, tinyGgufBytes } from "../../../../../test/helpers/tiny-gguf.js";
import { readLlamaConfig } from "./llama-config.js";

const coder = coderModelPath();
/** The real Gemma 3 270M file (`kiln models pull gemma3-270m`), when this machine has it. */
const GEMMA = process.env.KILN_TEST_GEMMA_MODEL ?? join(process.env.KILN_HOME ?? join(homedir(), ".kiln"), "models", "gemma3-270m.gguf");

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

  it("reads qwen2: NEOX RoPE, q/k/v biases, its freq base and ε (the tiny fixture and the real coder model)", async () => {
    const tiny = readLlamaConfig(parseGgufHeader(tinyGgufBytes(1, { qwen2: true })));
    expect(tiny).toMatchObject({ architecture: "qwen2", ropeStyle: "neox", attentionBias: true, ropeTheta: 1e6 });
    expect(tiny.rmsEpsilon).toBeCloseTo(1e-6, 12);
    expect(readLlamaConfig(parseGgufHeader(tinyGgufBytes(1)))).toMatchObject({ ropeStyle: "norm", attentionBias: false });
    if (!coder) return;
    expect(readLlamaConfig(await readGgufHeader(coder))).toMatchObject({
      architecture: "qwen2", layers: 24, embedding: 896, heads: 14, kvHeads: 2, headDim: 64, feedForward: 4864, vocabSize: 151936,
      ropeTheta: 1e6, ropeStyle: "neox", attentionBias: true, tiedEmbeddings: false,
    });
  });

  it.skipIf(!existsSync(GEMMA))("refuses the real Gemma 3 270M file at load, naming its architecture", async () => {
    const header = await readGgufHeader(GEMMA);
    expect(() => readLlamaConfig(header)).toThrow(/architecture is "gemma3" \(use the llama-cpp backend for it\)/);
  });

  it("refuses another architecture (Gemma 3) naming it, and names a missing key", async () => {
    expect(() => readLlamaConfig(parseGgufHeader(encodeGguf([{ key: "general.architecture", type: GgufType.STRING, value: "gemma3" }], [])))).toThrow(
      /runs llama and qwen2 models; this file's architecture is "gemma3" \(use the llama-cpp backend for it\)/,
    );
    const bare = encodeGguf([{ key: "general.architecture", type: GgufType.STRING, value: "llama" }], []);
    expect(() => readLlamaConfig(parseGgufHeader(bare))).toThrow(/lacks the metadata key llama\.embedding_length/);
  });
});
