/**
 * The prefill lane on the real default model: a long prompt is evaluated in the lane's own context (the main
 * context's native batches never carry it, but its last token) while a stream keeps generating, its greedy answer is
 * the one the main context gives without the lane — from an empty slot and from a cached prefix moved into the lane —
 * and a client that leaves mid-prompt leaves what was evaluated cached for its retry.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Llama } from "node-llama-cpp";
import { loadLlamaCppModel, type LlamaCppModel } from "../../src/engine/backends/llama-cpp/llama-cpp-model.js";
import { openLlama } from "../../src/engine/backends/llama-cpp/load-llama.js";
import type { CompletionRequest } from "../../src/engine/index.js";
import { nativeContextOf, recordBatches, watchBatches, type Batch } from "../helpers/native-batches.js";
import { realModelPath, testThreads } from "../helpers/real-model.js";
import { readEvents, readInBackground, startOf, textOf } from "../helpers/stream-events.js";

let llama: Llama;
let laned: LlamaCppModel;
let plain: LlamaCppModel;
/** Tokens per sequence id in each of the laned model's main-context native batches. */
let batches: Batch[] = [];

/** The laned model's lane (internal): its opening (whose result holds its native context), and its warm-up under way. */
type Lane = { opening?: Promise<{ parts: { context: unknown } } | null>; warming?: Promise<void> };
const laneOf = (model: LlamaCppModel) => (model as unknown as { runtime: { lane: Lane } }).runtime.lane;

beforeAll(async () => {
  llama = await openLlama(false);
  const options = { id: "m", path: realModelPath(), llama, parallel: 2, ctxSize: 4096, threads: testThreads() };
  laned = await loadLlamaCppModel(options);
  plain = await loadLlamaCppModel({ ...options, prefillLane: false });
  batches = recordBatches(nativeContextOf(laned));
});

afterAll(async () => {
  await laned?.dispose();
  await plain?.dispose();
  await llama?.dispose();
});

/**
 * A raw completion of a counting text from `from`: 240 numbers from 1 are 1,091 tokens, and from 1000 on each number
 * is 6 (40 numbers are 239 tokens, 180 are 1,079). The long prompts here are just over the lane's 1,024 uncached
 * tokens: each is evaluated on one thread, twice where the main context's answer is compared, and longer ones only
 * cost time (a test that evaluated ~1,600-token prompts and their ~3,200-token extensions twice each took 53 s alone
 * on a quiet machine and timed out at 120 s in the suite with two other processes busy on 2 cores).
 */
const counting = (numbers: number, maxTokens: number, from = 1): CompletionRequest => ({
  model: "m", prompt: Array.from({ length: numbers }, (_, i) => i + from).join(", ") + ",", maxTokens, sampling: { temperature: 0 },
});

describe("the prefill lane", () => {
  it("is enabled for a CPU model serving several sequences, its context created only at the first long prompt", () => {
    expect(laned.info.details?.prefillLane).toBe(true);
    expect(plain.info.details?.prefillLane).toBe(false);
    expect(laneOf(laned).opening).toBeUndefined();
  });

  it("is opened beside the load for a server when memory allows, and then serves the first long prompt", async () => {
    const served = await loadLlamaCppModel({ id: "m", path: realModelPath(), llama, parallel: 2, ctxSize: 4096, threads: testThreads(), warmUp: true });
    try {
      expect(laneOf(served).warming).toBeInstanceOf(Promise);
      await laneOf(served).warming;
      expect((await laneOf(served).opening)?.parts.context).toBeDefined();
      const mainBatches = recordBatches(nativeContextOf(served));
      const answer = await readEvents(served.complete(counting(240, 4)));
      expect(startOf(answer).inputTokens).toBeGreaterThan(1024);
      // The main context evaluated the prompt's last token and the generated ones; the lane did the rest.
      const promptTokensInMain = mainBatches.reduce((sum, batch) => sum + [...batch.values()].reduce((s, n) => s + n, 0), 0);
      expect(promptTokensInMain).toBeLessThanOrEqual(4);
      expect(textOf(answer)).not.toBe("");
    } finally {
      await served.dispose();
    }
    expect(await laneOf(served).opening).toBeNull();
  });

  it("evaluates a long prompt beside a running stream, which goes on generating meanwhile", async () => {
    const stop = new AbortController();
    const streaming = readInBackground(laned.complete({ ...counting(8, 3000), prompt: "Counting on: 1, 2, 3, 4, 5, 6, 7, 8," }, { signal: stop.signal }));
    await streaming.running;
    const firstBatch = batches.length;
    const before = streaming.tokens();
    const long = await readEvents(laned.complete(counting(240, 1)));
    const during = streaming.tokens() - before;
    stop.abort();
    await streaming.done;
    const promptTokens = startOf(long).inputTokens;
    expect(promptTokens).toBeGreaterThan(1024);
    // The stream's own sequence is the one that had tokens before the long request came.
    const streamId = [...(batches[firstBatch - 1]?.keys() ?? [])][0];
    const longTokensInMain = batches.slice(firstBatch).reduce((sum, batch) => sum + [...batch].filter(([id]) => id !== streamId).reduce((s, [, n]) => s + n, 0), 0);
    expect(longTokensInMain).toBe(1);
    expect(during).toBeGreaterThan(10);
  });

  it("answers as the main context does from a cached prefix, which it moves into the lane and extends", async () => {
    // The main context evaluates the short prefix (239 tokens); the longer prompt (1,319) has 1,080 more, for the lane.
    const prefix = counting(40, 1, 1000);
    const longer = counting(220, 12, 1000);
    await readEvents(laned.complete(prefix));
    await readEvents(plain.complete(prefix));
    const lane = watchBatches(nativeContextOf((await laneOf(laned).opening)!.parts));
    let viaLane: Awaited<ReturnType<typeof readEvents>>;
    try {
      viaLane = await readEvents(laned.complete(longer));
    } finally {
      lane.stop();
    }
    expect(textOf(viaLane)).toBe(textOf(await readEvents(plain.complete(longer))));
    expect(textOf(viaLane).length).toBeGreaterThan(0);
    // The lane started from the cached prefix: it evaluated only the rest of the prompt (all but its last token).
    const { inputTokens, cachedInputTokens } = startOf(viaLane);
    expect(cachedInputTokens).toBeGreaterThanOrEqual(200);
    const laneTokens = lane.batches.reduce((sum, batch) => sum + [...batch.values()].reduce((s, n) => s + n, 0), 0);
    expect(laneTokens).toBe(inputTokens - cachedInputTokens - 1);
    // And moved the whole prompt into the main context: asked again, all of it but the last token is cached.
    const again = await readEvents(laned.complete(longer));
    expect(startOf(again).cachedInputTokens).toBe(startOf(again).inputTokens - 1);
  });

  it("leaves what it evaluated cached when the client leaves mid-prompt", async () => {
    // The lane was opened by the tests before this one.
    const opened = await laneOf(laned).opening;
    expect(opened).toBeTruthy();
    const abort = new AbortController();
    // The client leaves as the lane starts its second chunk (its first is always evaluated).
    const lane = watchBatches(nativeContextOf(opened!.parts), { onBatch: () => lane.batches.length === 2 && abort.abort() });
    try {
      for await (const event of laned.complete(counting(185, 4, 5000), { signal: abort.signal })) void event;
    } catch {
      // An abort may surface as an error from the stream; what matters is what the retry finds.
    } finally {
      lane.stop();
    }
    expect(lane.batches.length).toBeGreaterThanOrEqual(2);
    const retry = await readEvents(laned.complete(counting(185, 4, 5000)));
    expect(startOf(retry).cachedInputTokens).toBeGreaterThan(0);
    expect(startOf(retry).cachedInputTokens).toBeLessThan(startOf(retry).inputTokens - 1);
  });

  it("evaluates a prompt from an empty slot in whole batches, answering as the main context does", async () => {
    const lane = watchBatches(nativeContextOf((await laneOf(laned).opening)!.parts));
    const request = counting(185, 12, 7000);
    try {
      const viaLane = await readEvents(laned.complete(request));
      expect(textOf(viaLane)).toBe(textOf(await readEvents(plain.complete(request))));
      // Two whole batches and a rest (the lane evaluates all but the last token).
      expect(startOf(viaLane).inputTokens - 1).toBeGreaterThan(2 * 512);
      expect(startOf(viaLane).cachedInputTokens).toBe(0);
    } finally {
      lane.stop();
    }
    const sizes = lane.batches.map((batch) => [...batch.values()].reduce((sum, tokens) => sum + tokens, 0));
    // All but the last chunk are full 512-token batches.
    expect(sizes.length).toBeGreaterThanOrEqual(3);
    expect(sizes.slice(0, -1).every((size) => size === 512)).toBe(true);
  });
});
