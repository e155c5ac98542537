/**
 * The large-prompt worker with the real default model: started lazily, or warmed at load (what `kiln serve` does so
 * the first long prompt after a restart does not wait for the worker to start); either way it tokenizes exactly as
 * the model does in place.
 */
import { getLlama, LlamaLogLevel } from "node-llama-cpp";
import { afterAll, describe, expect, it } from "vitest";
import { PromptThread } from "../../src/engine/text/prompt-thread.js";
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
});
