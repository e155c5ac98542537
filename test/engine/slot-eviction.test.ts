/**
 * A short unrelated request must not evict another conversation's cached prompt: coding agents send side requests
 * (titles, summaries, a second tool's prompt) that share only the chat template's opening tokens with the main
 * conversation, and re-evaluating that conversation's long prompt costs minutes on a CPU. Caches of similar size
 * are no reason to scatter concurrent requests over non-adjacent slots (each gap costs a pass per step). Real default
 * model.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { loadLlamaCppModel } from "../../src/engine/backends/llama-cpp/llama-cpp-model.js";
import { openLlama } from "../../src/engine/backends/llama-cpp/load-llama.js";
import { createEngine, type Engine, type GenerationEvent } from "../../src/engine/index.js";
import { realModelPath, testThreads } from "../helpers/real-model.js";
import { readEvents, startOf, userRequest } from "../helpers/stream-events.js";

let engine: Engine;

/** A completion on the model: the events of a greedy raw-text request. */
type Complete = (prompt: string, maxTokens: number) => Promise<GenerationEvent[]>;

/**
 * Runs `test` on a fresh 4-sequence model, with the sequence ids each of its decode batches holds as node-llama-cpp
 * adds them (its internal addon object).
 */
async function withBatches(ctxSize: number, test: (complete: Complete, batches: number[][]) => Promise<void>): Promise<void> {
  const llama = await openLlama(false);
  const model = await loadLlamaCppModel({ id: "smollm2-135m", path: realModelPath(), llama, parallel: 4, ctxSize, threads: testThreads() });
  try {
    const native = (model as unknown as { context: { _ctx: Record<string, (...args: unknown[]) => unknown> } }).context._ctx;
    const batches: number[][] = [];
    const { initBatch, addToBatch } = native;
    Object.defineProperty(native, "initBatch", { configurable: true, value: (...args: unknown[]) => { batches.push([]); return initBatch?.apply(native, args); } });
    Object.defineProperty(native, "addToBatch", { configurable: true, value: (...args: unknown[]) => { batches.at(-1)?.push(Number(args[0])); return addToBatch?.apply(native, args); } });
    await test((prompt, maxTokens) => readEvents(model.complete({ model: "smollm2-135m", prompt, maxTokens, sampling: { temperature: 0 } })), batches);
  } finally {
    await model.dispose();
    await llama.dispose();
  }
}

beforeAll(async () => {
  engine = await createEngine({ models: [{ id: "smollm2-135m", path: realModelPath(), aliases: ["default"] }], parallel: 2, ctxSize: 2048, threads: testThreads() });
});

afterAll(async () => {
  await engine?.close();
});

it("keeps a long cached prompt when an unrelated short request arrives, so the conversation's next turn reuses it", async () => {
  const text = Array.from({ length: 60 }, (_, i) => `Rule ${i}: keep the kiln at ${900 + i} degrees.`).join(" ");
  const conversation = userRequest("default", text, { maxTokens: 1 });
  const first = startOf(await readEvents(engine.generate(conversation)));
  // The side request shares the template's opening (system prompt) with the conversation and nothing else.
  const side = startOf(await readEvents(engine.generate(userRequest("default", "Title?", { maxTokens: 1 }))));
  expect(side.cachedInputTokens).toBeLessThan(64);
  const again = startOf(await readEvents(engine.generate(conversation)));
  expect(first.inputTokens).toBeGreaterThan(400);
  expect(again.cachedInputTokens).toBe(first.inputTokens - 1);
});

it("gives concurrent requests adjacent slots when the caches they would erase are of similar size", async () => {
  await withBatches(512, async (complete, batches) => {
    // One request after another fills slots 0–3; 0 and 2 end up holding fewer tokens than 1 and 3, but within a
    // factor of two, so the shortest (0 and 2, which are not neighbours) is no reason to split the next two requests.
    for (const [i, words] of [12, 20, 12, 20].entries()) {
      await complete(`Note ${i}: ${"kiln ".repeat(words)}`, 2);
    }
    batches.length = 0;
    await Promise.all([complete("Counting birds: 1, 2, 3,", 16), complete("Counting boats: 1, 2, 3,", 16)]);
    const shared = batches.filter((ids) => ids.length === 2);
    expect(shared.length).toBeGreaterThan(8);
    for (const [a = 0, b = 0] of shared) expect(b - a).toBe(1);
  });
});

it("moves a free slot's long cache aside so that a new request joins the busy slots' pass, and both caches stay", async () => {
  await withBatches(1024, async (complete, batches) => {
    // Slots 0–3 in turn: long documents in 0 and 2, short notes in 1 and 3.
    const longText = (topic: string) => Array.from({ length: 50 }, (_, i) => `${topic} ${i}: keep the kiln at ${900 + i} degrees.`).join(" ");
    const documents = [longText("Rule"), longText("Law")];
    const first = [];
    for (const [i, prompt] of [documents[0]!, "Note one: kiln.", documents[1]!, "Note two: kiln."].entries()) {
      const start = startOf(await complete(prompt, 1));
      if (i % 2 === 0) first.push(start);
    }
    expect(first[0]!.inputTokens).toBeGreaterThan(500);
    batches.length = 0;
    // A stream takes a short note's slot (1, the older); the next request would take the other (3), apart from it,
    // unless a document's slot beside the stream is freed by moving its cache into 3.
    const stream = complete("Counting birds: 1, 2, 3,", 48);
    while (!batches.some((ids) => ids.length === 1)) await new Promise((resolve) => setTimeout(resolve, 5));
    await Promise.all([stream, complete("Counting boats: 1, 2, 3,", 24)]);
    const shared = batches.filter((ids) => ids.length === 2);
    expect(shared.length).toBeGreaterThan(8);
    for (const [a = 0, b = 0] of shared) expect(b - a).toBe(1);
    // Both documents are still cached whole.
    for (const [i, document] of documents.entries()) {
      expect(startOf(await complete(document, 1)).cachedInputTokens).toBe(first[i]!.inputTokens - 1);
    }
  });
});
