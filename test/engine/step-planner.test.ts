/**
 * The step planner on the real default model, watched at node-llama-cpp's native batches: a 245-token prompt that
 * arrives beside 7 running streams rides steps with all 7 streams' tokens (so they keep getting a token every step),
 * in chunks of at least the planner's minimum, so its first token arrives within two steps however slow the machine.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Llama } from "node-llama-cpp";
import { loadLlamaCppModel, type LlamaCppModel } from "../../src/engine/backends/llama-cpp/llama-cpp-model.js";
import { openLlama } from "../../src/engine/backends/llama-cpp/load-llama.js";
import { MIN_PROMPT_TOKENS } from "../../src/engine/backends/llama-cpp/step-planner.js";
import type { CompletionRequest } from "../../src/engine/index.js";
import { nativeContextOf, watchBatches } from "../helpers/native-batches.js";
import { realModelPath, testThreads } from "../helpers/real-model.js";
import { finishOf, readEvents, readInBackground } from "../helpers/stream-events.js";

let llama: Llama;
let model: LlamaCppModel;
const STREAMS = 7;

beforeAll(async () => {
  llama = await openLlama(false);
  model = await loadLlamaCppModel({ id: "m", path: realModelPath(), llama, parallel: STREAMS + 1, ctxSize: 2048, threads: testThreads(), prefixCache: false });
});

afterAll(async () => {
  await model?.dispose();
  await llama?.dispose();
});

const stream = (i: number): CompletionRequest => ({
  model: "m", prompt: `List ${i}: 1, 2, 3, 4, 5,`, maxTokens: 2000, sampling: { temperature: 0 },
});

/** About 245 tokens of the default model: a counting text. */
const prompt: CompletionRequest = {
  model: "m", prompt: Array.from({ length: 49 }, (_, i) => i + 100).join(", ") + ",", maxTokens: 1, sampling: { temperature: 0 },
};

describe("step planner", () => {
  it("gives a prompt arriving beside 7 streams its first token within bounded steps, each shared with all of them", async () => {
    const controllers = Array.from({ length: STREAMS }, () => new AbortController());
    const streams = controllers.map((controller, i) => readInBackground(model.complete(stream(i), { signal: controller.signal })));
    await Promise.all(streams.map((s) => s.running));
    const watch = watchBatches(nativeContextOf(model));
    let events;
    let streamIds: Set<number>;
    try {
      // A few steps of the streams alone tell which sequences they hold.
      const before = streams.reduce((sum, s) => sum + s.tokens(), 0);
      while (streams.reduce((sum, s) => sum + s.tokens(), 0) < before + 3 * STREAMS) await new Promise((resolve) => setTimeout(resolve, 10));
      streamIds = new Set(watch.batches.flatMap((batch) => [...batch.keys()]));
      events = await readEvents(model.complete(prompt));
    } finally {
      watch.stop();
      for (const controller of controllers) controller.abort();
      await Promise.all(streams.map((s) => s.done));
    }
    const promptTokens = finishOf(events).usage.inputTokens;
    expect(promptTokens).toBeGreaterThan(200);
    expect(streamIds.size).toBe(STREAMS);
    // The prompt's sequence is the one the streams do not hold; every batch that carried its tokens is a step.
    const prefill = watch.batches.filter((batch) => [...batch.keys()].some((id) => !streamIds.has(id)));
    const chunks = prefill.map((batch) => [...batch.entries()].find(([id]) => !streamIds.has(id))![1]);
    expect(chunks.reduce((a, b) => a + b, 0)).toBe(promptTokens);
    // A step holds at least 128 prompt tokens whatever the machine's speed (on a quiet one the whole prompt fits the
    // step limit and goes in one).
    expect(prefill.length).toBeLessThanOrEqual(Math.ceil(promptTokens / MIN_PROMPT_TOKENS));
    for (const chunk of chunks.slice(0, -1)) expect(chunk).toBeGreaterThanOrEqual(MIN_PROMPT_TOKENS);
    // Every step that carried prompt tokens also carried a token of each of the 7 streams.
    for (const batch of prefill) expect(batch.size).toBe(STREAMS + 1);
  });
});
