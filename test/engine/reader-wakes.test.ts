/**
 * Event readers woken once the next decode step is under way (reader-wakes.ts), forced on for the real default model
 * on the CPU (by default only a model whose every layer is on a GPU does this): each token's event reaches its reader
 * after the step that follows the token was dispatched, the last ones (no step follows) still arrive, and two streams
 * read the same text as from a model that wakes its readers at once. Dispatches are counted by a hook wrapped around
 * the context's decode after the model's own, so a count is taken once a step is under way.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import type { Llama } from "node-llama-cpp";
import { loadLlamaCppModel, type LlamaCppModel } from "../../src/engine/backends/llama-cpp/llama-cpp-model.js";
import { openLlama } from "../../src/engine/backends/llama-cpp/load-llama.js";
import type { CompletionRequest } from "../../src/engine/index.js";
import { realModelPath, testThreads } from "../helpers/real-model.js";

let llama: Llama;
let during: LlamaCppModel;
let atOnce: LlamaCppModel;

const load = (readersDuringSteps: boolean) => loadLlamaCppModel({
  id: "smollm2-135m", path: realModelPath(), llama, parallel: 2, ctxSize: 512, threads: testThreads(), prefixCache: false, readersDuringSteps,
});

beforeAll(async () => {
  llama = await openLlama(false);
  during = await load(true);
  atOnce = await load(false);
});

afterAll(async () => {
  await during?.dispose();
  await atOnce?.dispose();
  await llama?.dispose();
});

/** Counts the model's dispatched decode steps (the hook runs once the model's own hooks have dispatched the step). */
function countDispatches(model: LlamaCppModel): { count: number } {
  const native = (model as unknown as { context: { _ctx: { decodeBatch(): Promise<void> } } }).context._ctx;
  const decodeBatch = native.decodeBatch;
  const counter = { count: 0 };
  native.decodeBatch = () => {
    const step = decodeBatch.call(native);
    counter.count++;
    return step;
  };
  return counter;
}

const request = (topic: string): CompletionRequest => ({
  model: "smollm2-135m", prompt: `A few facts about ${topic}:\n1.`, maxTokens: 12, sampling: { temperature: 0 },
});

/** Each text delta's text, with the steps dispatched since the request began when its reader got it. */
async function read(model: LlamaCppModel, counter: { count: number }, topic: string): Promise<{ text: string; at: number[]; finished: boolean }> {
  const at: number[] = [];
  const start = counter.count;
  let text = "";
  let finished = false;
  for await (const event of model.complete(request(topic))) {
    if (event.type === "text-delta") {
      at.push(counter.count - start);
      text += event.text;
    }
    if (event.type === "finish") finished = true;
  }
  return { text, at, finished };
}

it("wakes a stream's reader once the step after its token is dispatched, and still delivers the last tokens", async () => {
  const lone = { atOnce: await read(atOnce, countDispatches(atOnce), "the moon"), during: await read(during, countDispatches(during), "the moon") };
  expect(lone.during.text).toBe(lone.atOnce.text);
  expect(lone.during.finished).toBe(true);
  const tokens = lone.atOnce.at.length;
  expect(tokens).toBeGreaterThan(4);
  expect(lone.during.at).toHaveLength(tokens);
  // Read at once, each token arrives before the step after it is dispatched (the prompt's step gives the first);
  // woken during steps, after it. The last token has no step after it and arrives all the same.
  const first = lone.atOnce.at[0]!;
  expect(lone.atOnce.at).toEqual(Array.from({ length: tokens }, (_, k) => first + k));
  expect(lone.during.at.slice(0, -1)).toEqual(Array.from({ length: tokens - 1 }, (_, k) => first + k + 1));
  expect(lone.during.at.at(-1)).toBeGreaterThanOrEqual(first + tokens - 1);
});

it("serves two streams at once with the same text as readers woken at once", async () => {
  const topics = ["rivers", "bread"];
  const counter = { count: 0 };
  const [during2, atOnce2] = await Promise.all([
    Promise.all(topics.map((topic) => read(during, counter, topic))),
    Promise.all(topics.map((topic) => read(atOnce, counter, topic))),
  ]);
  expect(during2.map((r) => r.text)).toEqual(atOnce2.map((r) => r.text));
  expect(during2.every((r) => r.finished)).toBe(true);
});
