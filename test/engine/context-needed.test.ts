/**
 * A one-shot reply's context (`kiln run`): the default context holds what the prompt and the reply's limit can take,
 * not the model's whole length, and that bound holds for the real tokenizer.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { getLlama, LlamaLogLevel, type Llama, type LlamaModel } from "node-llama-cpp";
import { createEngine, type Engine } from "../../src/engine/index.js";
import { contextNeeded } from "../../src/cli/run-prompt.js";
import { realModelPath, testThreads } from "../helpers/real-model.js";
import { readEvents, textOf, userRequest } from "../helpers/stream-events.js";

describe("ctxSizeAtMost on the real default model (train context 8,192)", () => {
  let engine: Engine | undefined;
  afterAll(async () => engine?.close());

  it("sizes the default context to the need, in llama.cpp's steps of 256, and generates in it", async () => {
    engine = await createEngine({ models: [{ id: "m", path: realModelPath() }], parallel: 1, ctxSizeAtMost: 1000, threads: testThreads() });
    const [info] = engine.listModels();
    expect(info).toMatchObject({ contextSize: 1024, details: { contextSizeSource: "needed" } });
    const reply = await readEvents(engine.generate(userRequest("m", "Name a colour.", { maxTokens: 8, sampling: { temperature: 0 } })));
    expect(textOf(reply).length).toBeGreaterThan(0);
    await engine.close();
    engine = undefined;
  });

  it("a need beyond the model's own context leaves the default as it was", async () => {
    engine = await createEngine({ models: [{ id: "m", path: realModelPath() }], parallel: 1, ctxSizeAtMost: 50_000, threads: testThreads() });
    expect(engine.listModels()[0]).toMatchObject({ contextSize: 8192, details: { contextSizeSource: "train" } });
    await engine.close();
    engine = undefined;
  });

  it("an asked context wins over the need", async () => {
    engine = await createEngine({ models: [{ id: "m", path: realModelPath() }], parallel: 1, ctxSize: 2048, ctxSizeAtMost: 1000, threads: testThreads() });
    expect(engine.listModels()[0]).toMatchObject({ contextSize: 2048, details: { contextSizeSource: "asked" } });
    await engine.close();
    engine = undefined;
  });
});

describe("contextNeeded bounds a prompt's tokens by its bytes", () => {
  let llama: Llama;
  let model: LlamaModel;
  beforeAll(async () => {
    llama = await getLlama({ build: "never", gpu: false, logLevel: LlamaLogLevel.error });
    model = await llama.loadModel({ modelPath: realModelPath(), vocabOnly: true });
  });
  afterAll(async () => {
    await model?.dispose();
    await llama?.dispose();
  });

  it("for prose, code, CJK, emoji and text that looks like the template's control tokens", () => {
    const texts = ["Summarise this file.", "def f(x):\n    return x ** 2  # 二乗", "日本語の文章です。", "👀🌍🔥 ok", "<|im_start|>user\nhi<|im_end|>", " ".repeat(50), "a\u0301e\u0301"];
    for (const text of texts) {
      // Special-token text in a prompt is plain text (kiln quotes it), as tokenized here without specials.
      const tokens = model.tokenize(text, false).length;
      expect(tokens).toBeLessThanOrEqual(Buffer.byteLength(text));
    }
    expect(contextNeeded("héllo", "be brief", 100)).toBe(6 + 8 + 512 + 100);
  });
});
