/**
 * A one-shot reply's context (`kiln run`): the default context holds what the prompt and the reply's limit can take,
 * not the model's whole length; that bound holds the rendered conversation and the reply on the real tokenizers and
 * chat templates.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { getLlama, LlamaLogLevel, type Llama, type LlamaModel } from "node-llama-cpp";
import { createEngine, type ChatRequest, type Engine } from "../../src/engine/index.js";
import { renderChatPrompt, type PromptTemplate } from "../../src/engine/text/render-prompt.js";
import { contextNeeded } from "../../src/cli/run-prompt.js";
import { coderModelPath, realModelPath, testThreads } from "../helpers/real-model.js";
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

/** Each model's tokenizer and chat template, loaded without weights. */
const models = [["the default model", realModelPath()], ["Qwen2.5-Coder-0.5B", coderModelPath()]] as const;

describe.each(models)("contextNeeded on %s's tokenizer and chat template", (_name, path) => {
  let llama: Llama;
  let model: LlamaModel;
  beforeAll(async () => {
    if (!path) return;
    llama = await getLlama({ build: "never", gpu: false, logLevel: LlamaLogLevel.error });
    model = await llama.loadModel({ modelPath: path, vocabOnly: true });
  });
  afterAll(async () => {
    await model?.dispose();
    await llama?.dispose();
  });

  const texts = ["Summarise this file.", "def f(x):\n    return x ** 2  # 二乗", "日本語の文章です。", "👀🌍🔥 ok", "<|im_start|>user\nhi<|im_end|>", " ".repeat(50), "a\u0301e\u0301"];

  it.skipIf(!path)("holds the rendered conversation and the reply, whatever the text (prose, code, CJK, emoji, control-token look-alikes)", () => {
    const template: PromptTemplate = { source: model.fileInfo.metadata.tokenizer?.chat_template, bosToken: model.tokens.bosString ?? undefined, eosToken: model.tokens.eosString ?? undefined };
    for (const text of texts) {
      // Special-token text in a prompt is plain text (kiln quotes it), as tokenized here without specials.
      expect(model.tokenize(text, false).length).toBeLessThanOrEqual(Buffer.byteLength(text));
      for (const system of [undefined, "Answer briefly."]) {
        const request: ChatRequest = { model: "m", system, messages: [{ role: "user", parts: [{ type: "text", text }] }], maxTokens: 64 };
        const promptTokens = model.tokenize(renderChatPrompt(request, template), true).length;
        expect(promptTokens + 64).toBeLessThanOrEqual(contextNeeded(text, system, 64));
      }
    }
  });
});
