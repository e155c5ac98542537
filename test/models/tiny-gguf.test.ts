import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Llama, LlamaModel } from "node-llama-cpp";
import { TINY_VOCABULARY_SIZE, tinyGgufBytes, writeTinyGguf } from "../helpers/tiny-gguf.js";

let llama: Llama;
let model: LlamaModel;

beforeAll(async () => {
  const { getLlama } = await import("node-llama-cpp");
  const path = await writeTinyGguf(join(await mkdtemp(join(tmpdir(), "kiln-tiny-")), "tiny.gguf"));
  llama = await getLlama({ build: "never", gpu: false });
  model = await llama.loadModel({ modelPath: path });
});
afterAll(async () => {
  await model?.dispose();
  await llama?.dispose();
});

describe("the tiny test GGUF", () => {
  it("is deterministic from its seed", () => {
    expect(tinyGgufBytes(1).equals(tinyGgufBytes(1))).toBe(true);
    expect(tinyGgufBytes(1).equals(tinyGgufBytes(2))).toBe(false);
  });

  it("tokenizes ChatML special tokens as single tokens", () => {
    const tokens = model.tokenize("<|im_start|>user\nhello<|im_end|>", true);
    expect(model.detokenize([tokens[0]!], true)).toBe("<|im_start|>");
    expect(model.detokenize([tokens.at(-1)!], true)).toBe("<|im_end|>");
    expect(model.detokenize(tokens, true)).toBe("<|im_start|>user\nhello<|im_end|>");
  });

  it("loads in node-llama-cpp with its ChatML template and generates tokens", async () => {
    const { LlamaChatSession } = await import("node-llama-cpp");
    const context = await model.createContext({ contextSize: 512, threads: 2, sequences: 2 });
    try {
      const session = new LlamaChatSession({ contextSequence: context.getSequence() });
      expect(session.chatWrapper.wrapperName).toBe("ChatML");
      session.dispose();
      const generated: number[] = [];
      const prompt = model.tokenize("<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n", true);
      for await (const token of context.getSequence().evaluate(prompt, { temperature: 0 })) {
        generated.push(token);
        if (generated.length === 4) break;
      }
      expect(generated).toHaveLength(4);
      expect(generated.every((t) => t >= 0 && t < TINY_VOCABULARY_SIZE)).toBe(true);
    } finally {
      await context.dispose();
    }
  });
});
