/**
 * The decode barrier on the real default model with four sequences in one context: concurrent requests share decode
 * steps (counted through node-llama-cpp's batch prioritization hook) in sequence-id order (seen at the native batch),
 * neither an abort nor a reader that stops reading holds up the other sequences, and the step clock counts no idle time
 * as host work.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { BatchItem, Llama, LlamaModel, PrioritizedBatchItem } from "node-llama-cpp";
import { loadLlamaCppModel, type LlamaCppModel } from "../../src/engine/backends/llama-cpp/llama-cpp-model.js";
import { openLlama } from "../../src/engine/backends/llama-cpp/load-llama.js";
import { checkEventSequence, type GenerationEvent, type CompletionRequest } from "../../src/engine/index.js";
import { realModelPath, testThreads } from "../helpers/real-model.js";
import { finishOf, readEvents, startOf } from "../helpers/stream-events.js";

const MAX_TOKENS = 24;
let llama: Llama;
let model: LlamaCppModel;
/** An independent tokenizer (vocabulary only) to check the engine's counts against. */
let vocabulary: LlamaModel;
/** Sequences in each decode batch node-llama-cpp dispatched. */
const batches: number[] = [];
/** The sequence ids of each batch, in the order they were added to the native batch. */
const nativeOrders: number[][] = [];

/** Records each batch's size and takes the items in order, as many tokens as fit. */
function recordBatch({ items, size }: { items: readonly BatchItem[]; size: number }): PrioritizedBatchItem[] {
  batches.push(items.length);
  let left = size;
  const chosen: PrioritizedBatchItem[] = [];
  for (const item of items) {
    if (left <= 0) break;
    const processAmount = Math.min(item.tokens.length, left);
    chosen.push({ item, processAmount });
    left -= processAmount;
  }
  return chosen;
}

beforeAll(async () => {
  llama = await openLlama(false);
  model = await loadLlamaCppModel({
    id: "smollm2-135m", path: realModelPath(), llama, parallel: 4, ctxSize: 1024, threads: testThreads(), prefixCache: false,
    batching: { itemPrioritizationStrategy: recordBatch },
  });
  vocabulary = await llama.loadModel({ modelPath: realModelPath(), vocabOnly: true });
  // Watch the native batch as node-llama-cpp fills it (its internal addon object, as batch-order.ts relies on).
  const native = (model as unknown as { context: { _ctx: Record<string, (...args: unknown[]) => unknown> } }).context._ctx;
  const { initBatch, addToBatch } = native;
  Object.defineProperty(native, "initBatch", { configurable: true, value: (...args: unknown[]) => { nativeOrders.push([]); return initBatch?.apply(native, args); } });
  Object.defineProperty(native, "addToBatch", { configurable: true, value: (...args: unknown[]) => { nativeOrders.at(-1)?.push(Number(args[0])); return addToBatch?.apply(native, args); } });
});

afterAll(async () => {
  await model?.dispose();
  await vocabulary?.dispose();
  await llama?.dispose();
});

/** A raw completion that goes on counting, so it runs to its token limit. */
const countRequest = (topic: string, maxTokens = MAX_TOKENS): CompletionRequest & { prompt: string } => ({
  model: "smollm2-135m", prompt: `Counting ${topic}: 1, 2, 3, 4, 5, 6, 7, 8,`, maxTokens, sampling: { temperature: 0 },
});

/**
 * A request whose prompt (281 tokens) is over the planner's whole-prompt size, so the request is a generating member
 * of the barrier when its prompt and first token are decoded: the step whose gap since the model's last decode the
 * step clock must not count after a pause.
 */
const longCountRequest = (topic: string) => countRequest(`${topic}, ${"and then some more, ".repeat(50)}`, 4);

/**
 * Runs `request` alone on `target` (after a pause of 1.5 s) and checks the step clock: its steps' compute and the host
 * work between them are disjoint parts of the request's own time, and the pause before it is neither.
 */
async function expectStepTimesWithin(target: LlamaCppModel, request: CompletionRequest): Promise<void> {
  const before = target.stepStats()!;
  const started = performance.now();
  await readEvents(target.complete(request));
  const requestMs = performance.now() - started;
  const after = target.stepStats()!;
  expect(after.steps).toBeGreaterThan(before.steps);
  expect(after.computeMs - before.computeMs + after.hostMs - before.hostMs).toBeLessThanOrEqual(requestMs);
}

/** Runs the requests together; returns each one's events and the mean sequences per decode step meanwhile. */
async function runTogether(topics: string[]): Promise<{ results: GenerationEvent[][]; sequencesPerStep: number }> {
  batches.length = 0;
  const results = await Promise.all(topics.map((topic) => readEvents(model.complete(countRequest(topic)))));
  return { results, sequencesPerStep: batches.reduce((a, b) => a + b, 0) / batches.length };
}

/** The prompt's tokens as the model's own tokenizer counts them, with the BOS the model expects. */
function promptTokens(topic: string): number {
  return vocabulary.tokenize(countRequest(topic).prompt, true).length + (vocabulary.tokens.shouldPrependBosToken ? 1 : 0);
}

function expectFullLength(events: GenerationEvent[], topic: string): void {
  expect(finishOf(events)).toMatchObject({ reason: "length", usage: { outputTokens: MAX_TOKENS, inputTokens: promptTokens(topic) } });
  expect(startOf(events).inputTokens).toBe(promptTokens(topic));
}

describe("decode barrier", () => {
  it("completes four concurrent requests with correct usage, decoding them together", async () => {
    const topics = ["colours", "fruits", "rivers", "birds"];
    const { results, sequencesPerStep } = await runTogether(topics);
    for (const [i, events] of results.entries()) expectFullLength(events, topics[i] ?? "");
    // Without the barrier node-llama-cpp settles into batches of N − 1 = 3; with it nearly every step holds all 4.
    expect(sequencesPerStep).toBeGreaterThan(3.4);
  });

  it("adds the sequences of every step to the native batch in increasing id order", async () => {
    nativeOrders.length = 0;
    await runTogether(["planets", "metals", "islands", "songs"]);
    const shared = nativeOrders.filter((ids) => ids.length > 1);
    expect(shared.length).toBeGreaterThan(MAX_TOKENS / 2);
    for (const ids of shared) expect(ids).toEqual([...ids].sort((a, b) => a - b));
  });

  it("gives concurrent requests adjacent sequences, so each step is one run of consecutive ids", async () => {
    // Single requests one after another leave the least recently used slot away from the others' neighbours.
    for (const topic of ["one", "two", "three"]) await readEvents(model.complete(countRequest(topic, 2)));
    nativeOrders.length = 0;
    await runTogether(["left", "right"]);
    const shared = nativeOrders.filter((ids) => ids.length === 2);
    expect(shared.length).toBeGreaterThan(MAX_TOKENS / 2);
    for (const [a = 0, b = 0] of shared) expect(b - a).toBe(1);
  });

  it("batches two concurrent requests in the same steps", async () => {
    const { results, sequencesPerStep } = await runTogether(["stars", "trees"]);
    for (const events of results) expect(finishOf(events).reason).toBe("length");
    // Without the barrier two sequences almost never share a step (about 1.02 per step).
    expect(sequencesPerStep).toBeGreaterThan(1.5);
  });

  it("times as host work only the gaps while sequences generate, not an idle spell before a request", async () => {
    await readEvents(model.complete(countRequest("pause", 4)));
    await new Promise((resolve) => setTimeout(resolve, 1500));
    await expectStepTimesWithin(model, longCountRequest("after the pause"));
  });

  it("times no host work between a model's warm-up and its first request", async () => {
    const warmed = await loadLlamaCppModel({ id: "smollm2-135m", path: realModelPath(), llama, parallel: 1, ctxSize: 512, threads: testThreads(), prefixCache: false, warmUp: true });
    try {
      await new Promise((resolve) => setTimeout(resolve, 1500));
      await expectStepTimesWithin(warmed, longCountRequest("after the warm-up"));
    } finally {
      await warmed.dispose();
    }
  });

  it("lets the other sequences finish when one is aborted mid-generation", async () => {
    const controller = new AbortController();
    const aborted = (async () => {
      const events: GenerationEvent[] = [];
      for await (const event of model.complete(countRequest("cities"), { signal: controller.signal })) {
        events.push(event);
        if (event.type === "text-delta") controller.abort();
      }
      return events;
    })();
    const others = ["lakes", "hills", "ships"];
    const results = await Promise.all(others.map((topic) => readEvents(model.complete(countRequest(topic)))));
    for (const [i, events] of results.entries()) expectFullLength(events, others[i] ?? "");
    const abortedEvents = await aborted;
    expect(checkEventSequence(abortedEvents)).toEqual([]);
    expect(finishOf(abortedEvents).reason).toBe("aborted");
    expect(finishOf(abortedEvents).usage.outputTokens).toBeLessThan(MAX_TOKENS);
  });

  it("does not hold the others while one reader stops reading, and that reader still gets every event", async () => {
    const others = ["coins", "boats"];
    let othersDone!: () => void;
    const othersFinished = new Promise<void>((resolve) => { othersDone = resolve; });
    // A long generation whose reader takes one event, then waits until the other requests have finished.
    const slow = (async () => {
      const events: GenerationEvent[] = [];
      for await (const event of model.complete(countRequest("metals", 40))) {
        events.push(event);
        if (events.length === 1) await othersFinished;
      }
      return events;
    })();
    const results = await Promise.all(others.map((topic) => readEvents(model.complete(countRequest(topic)))));
    othersDone();
    for (const [i, events] of results.entries()) expectFullLength(events, others[i] ?? "");
    const slowEvents = await slow;
    expect(checkEventSequence(slowEvents)).toEqual([]);
    expect(finishOf(slowEvents)).toMatchObject({ reason: "length", usage: { outputTokens: 40 } });
  });
});
