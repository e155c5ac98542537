/**
 * The large-prompt worker with the real default model: started lazily, or warmed at load (what `kiln serve` does so
 * the first long prompt after a restart does not wait for the worker to start); either way it tokenizes exactly as
 * the model does in place. A vocabulary without prompt threads (`kiln run`, `kiln chat`) tokenizes long prompts in
 * place.
 */
import { getLlama, LlamaLogLevel } from "node-llama-cpp";
import { afterAll, describe, expect, it, vi } from "vitest";
import { PromptThread } from "../../src/engine/text/prompt-thread.js";
import { scanVocabulary, vocabularyOf } from "../../src/engine/text/vocabulary.js";
import { realModelPath } from "../helpers/real-model.js";

const threads: PromptThread[] = [];
afterAll(async () => {
  await Promise.all(threads.map((thread) => thread.dispose()));
});

describe("PromptThread", () => {
  it("starts only when asked, or at once when warmed, and tokenizes as the model does", async () => {
    const [lazy, warmed] = [new PromptThread(realModelPath()), new PromptThread(realModelPath())];
    threads.push(lazy, warmed);
    const ready = warmed.warm();
    expect([lazy.started, warmed.started]).toEqual([false, true]);
    await ready;
    const llama = await getLlama({ build: "never", gpu: false, logLevel: LlamaLogLevel.error });
    const model = await llama.loadModel({ modelPath: realModelPath(), vocabOnly: true });
    const text = "def add(a, b):\n    return a + b\n";
    const expected = Array.from(model.tokenize(text, false));
    expect(await warmed.tokenize([text, 7])).toEqual([...expected, 7]);
    expect(await lazy.tokenize([text])).toEqual(expected);
    await model.dispose();
  });

  it("is stopped only once the jobs it was given end: never inside the vocabulary load of its warm-up", async () => {
    // A model whose context does not fit disposes its prompt thread while the warm-up may still be loading. Terminated
    // inside that native call, the worker aborted the whole process; this job, asked just before the dispose, is in
    // the same place.
    const thread = new PromptThread(realModelPath());
    const tokens = thread.tokenize(["hello there"]);
    await thread.dispose();
    expect(thread.started).toBe(false);
    expect((await tokens).length).toBeGreaterThan(0);
  });

  it("tokenizes a long prompt on its thread, or in place for a vocabulary without threads, with the same tokens", async () => {
    const llama = await getLlama({ build: "never", gpu: false, logLevel: LlamaLogLevel.error });
    const model = await llama.loadModel({ modelPath: realModelPath(), vocabOnly: true });
    const scan = await scanVocabulary(model, realModelPath());
    // Over the 16 KB a server tokenizes in place.
    const text = "The kiln fires the clay at night; the potter reads the cones at dawn. ".repeat(300);
    const expected = Array.from(model.tokenize(text, false));
    const thread = new PromptThread(realModelPath());
    threads.push(thread);
    const served = vocabularyOf(model, realModelPath(), scan, thread);
    expect(await served.tokenizePrompt([text])).toEqual(expected);
    expect(thread.started).toBe(true);
    const asked = vi.spyOn(PromptThread.prototype, "tokenize");
    try {
      const oneUser = vocabularyOf(model, realModelPath(), scan, undefined);
      expect(await oneUser.tokenizePrompt([text, 7])).toEqual([...expected, 7]);
      expect(asked).not.toHaveBeenCalled();
      await oneUser.close();
    } finally {
      asked.mockRestore();
    }
    await served.close();
    await model.dispose();
  });
});
