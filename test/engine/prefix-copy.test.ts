/**
 * A new conversation whose prompt begins as another sequence's cache does (the same system prompt) copies that
 * prefix into its own slot instead of evaluating it, and neither conversation loses its cache. Real default model;
 * an engine without the prefix cache is the reference. The copy is checked by the first token's distribution: a
 * prompt evaluated in other chunks or beside other sequences gets probabilities that differ by up to about 0.01 (and
 * greedy text that may part ways after a near tie), while a wrong or unfinished copy changes the distribution outright.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import type { Llama } from "node-llama-cpp";
import { loadLlamaCppModel, type LlamaCppModel } from "../../src/engine/backends/llama-cpp/llama-cpp-model.js";
import { openLlama } from "../../src/engine/backends/llama-cpp/load-llama.js";
import type { ChatRequest, GenerationEvent } from "../../src/engine/index.js";
import { realModelPath, testThreads } from "../helpers/real-model.js";
import { readEvents, readInBackground, startOf, userRequest } from "../helpers/stream-events.js";

const system = Array.from({ length: 30 }, (_, i) => `Rule ${i}: the kiln stays at ${900 + i} degrees.`).join(" ");
// Without a measured copy cost (no warm-up here), copies of 64 tokens and more pay: the replies leave longer tails.
const ask = (text: string, maxTokens = 8): ChatRequest => userRequest("default", text, { system, maxTokens, logprobs: 5 });

let llama: Llama;
let engine: LlamaCppModel;
let reference: LlamaCppModel;

beforeAll(async () => {
  llama = await openLlama(false);
  const model = { id: "default", path: realModelPath(), llama, threads: testThreads() };
  engine = await loadLlamaCppModel({ ...model, parallel: 4, ctxSize: 4096 });
  reference = await loadLlamaCppModel({ ...model, parallel: 1, ctxSize: 2048, prefixCache: false });
});

afterAll(async () => {
  await engine?.dispose();
  await reference?.dispose();
  await llama?.dispose();
});

/** The first generated token's top alternatives, as logprobs by token text. */
function firstTokenTop(events: GenerationEvent[]): Map<string, number> {
  const first = events.find((event) => event.type === "text-delta" && event.logprobs?.length);
  const entry = first?.type === "text-delta" ? first.logprobs![0]! : undefined;
  return new Map((entry?.top ?? []).map((alternative) => [alternative.token, alternative.logprob]));
}

/** The same first token, and each of the reference's top alternatives within 0.05 of its probability. */
async function expectSameDistribution(events: GenerationEvent[], request: ChatRequest): Promise<void> {
  const got = firstTokenTop(events);
  const want = firstTokenTop(await readEvents(reference.generate(request)));
  expect(want.size).toBe(5);
  expect([...got.keys()][0]).toBe([...want.keys()][0]);
  for (const [token, logprob] of want) expect(Math.abs(Math.exp(got.get(token) ?? -Infinity) - Math.exp(logprob)), token).toBeLessThan(0.05);
}

it("copies an idle conversation's system prompt into a new one's slot, and both keep their caches", async () => {
  const first = ask("What temperature is rule 3?", 80);
  const firstStart = startOf(await readEvents(engine.generate(first)));
  const second = ask("List rules 7 and 8.");
  const secondEvents = await readEvents(engine.generate(second));
  // The whole system prompt and the template around it came from the first conversation's sequence.
  expect(firstStart.inputTokens).toBeGreaterThan(300);
  expect(startOf(secondEvents).cachedInputTokens).toBeGreaterThan(300);
  expect(startOf(secondEvents).cacheTier).toBe("ram");
  await expectSameDistribution(secondEvents, second);
  // Both conversations still hold their whole prompts, and the first one's cache was not disturbed.
  const firstAgain = await readEvents(engine.generate(first));
  expect(startOf(firstAgain).cachedInputTokens).toBe(firstStart.inputTokens - 1);
  await expectSameDistribution(firstAgain, first);
  expect(startOf(await readEvents(engine.generate(second))).cachedInputTokens).toBe(startOf(secondEvents).inputTokens - 1);
});

it("copies the prefix of a sequence that is generating, leaving that sequence's cache intact", async () => {
  const running = ask("Write a long poem about the kiln rules.", 96);
  const stream = readInBackground(engine.generate(running));
  await stream.running;
  const beside = ask("Which rule mentions 915 degrees?");
  const besideEvents = await readEvents(engine.generate(beside));
  expect(startOf(besideEvents).cachedInputTokens).toBeGreaterThan(300);
  await expectSameDistribution(besideEvents, beside);
  const runningStart = startOf(await stream.done);
  const runningAgain = await readEvents(engine.generate(running));
  expect(startOf(runningAgain).cachedInputTokens).toBe(runningStart.inputTokens - 1);
  await expectSameDistribution(runningAgain, running);
});

it("copies a prefix into the slot of a prompt that the prefill lane then evaluates", async () => {
  // A fresh model, so the slot copied into has never held these tokens: a copy the lane read before it happened
  // would give the lane empty cells.
  const fresh = await loadLlamaCppModel({ id: "default", path: realModelPath(), llama, threads: testThreads(), parallel: 2, ctxSize: 4096 });
  try {
    await readEvents(fresh.generate(ask("What temperature is rule 3?", 80)));
    // The lane (internal) counts the states it moved between the contexts.
    const lane = (fresh as unknown as { runtime: { lane: { transfers: number } } }).runtime.lane;
    // 180 numbers from 1000 are 1,079 tokens: with the copied system prompt, over the lane's 1,024 uncached tokens.
    const long = ask(`Sum these: ${Array.from({ length: 180 }, (_, i) => i + 1000).join(", ")}.`);
    const events = await readEvents(fresh.generate(long));
    expect(startOf(events).cachedInputTokens).toBeGreaterThan(300);
    expect(lane.transfers).toBeGreaterThan(0);
    await expectSameDistribution(events, long);
  } finally {
    await fresh.dispose();
  }
});
