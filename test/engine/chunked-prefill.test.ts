/**
 * Chunked prefill on the real default model, watched at node-llama-cpp's native batch: a long prompt is evaluated in
 * chunks that each share a decode step with a running stream (so the stream gets a token at every chunk), an abort
 * while a prompt is being evaluated stops the evaluation before the prompt is complete, and a step in flight whose
 * request is abandoned stops mid-way (llama.cpp's abort callback) while the context goes on working.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Llama } from "node-llama-cpp";
import { loadLlamaCppModel, type LlamaCppModel } from "../../src/engine/backends/llama-cpp/llama-cpp-model.js";
import { openLlama } from "../../src/engine/backends/llama-cpp/load-llama.js";
import type { GenerationEvent, CompletionRequest } from "../../src/engine/index.js";
import { nativeContextOf, recordBatches, type Batch } from "../helpers/native-batches.js";
import { realModelPath, testThreads } from "../helpers/real-model.js";
import { finishOf, readEvents, readInBackground } from "../helpers/stream-events.js";

let llama: Llama;
let model: LlamaCppModel;
let batches: Batch[] = [];
/** Called at the start of every native batch (the abort test stops a request from here). */
let onBatch: (() => void) | undefined;
/** Called once a batch's decode is under way (on llama.cpp's worker thread), with its outcome to come. */
let onDecode: ((outcome: Promise<unknown>) => void) | undefined;

beforeAll(async () => {
  llama = await openLlama(false);
  // Without the prefill lane, which takes prompts of 1,024 tokens and more into a context of its own (prefill-lane.test.ts).
  model = await loadLlamaCppModel({ id: "m", path: realModelPath(), llama, parallel: 2, ctxSize: 4096, threads: testThreads(), prefixCache: false, prefillLane: false });
  batches = recordBatches(nativeContextOf(model), { onBatch: () => onBatch?.(), onDecode: (outcome) => onDecode?.(outcome) });
});

afterAll(async () => {
  await model?.dispose();
  await llama?.dispose();
});

/** A raw completion of a long counting text (about 5 tokens per number). */
const longPrompt = (numbers: number, maxTokens: number): CompletionRequest => ({
  model: "m", prompt: Array.from({ length: numbers }, (_, i) => i + 1).join(", ") + ",", maxTokens, sampling: { temperature: 0 },
});

const streamRequest: CompletionRequest = {
  model: "m", prompt: "Counting on: 1, 2, 3, 4, 5, 6, 7, 8,", maxTokens: 2000, sampling: { temperature: 0 },
};

describe("chunked prefill", () => {
  it("evaluates a long prompt in chunks that each share a step with a running stream", async () => {
    const stream = new AbortController();
    const streaming = readInBackground(model.complete(streamRequest, { signal: stream.signal }));
    await streaming.running;
    const firstBatch = batches.length;
    const tokensBefore = streaming.tokens();
    const long = await readEvents(model.complete(longPrompt(150, 1)));
    const tokensDuring = streaming.tokens() - tokensBefore;
    stream.abort();
    await streaming.done;

    const promptTokens = finishOf(long).usage.inputTokens;
    // The stream holds sequence 0 and the long prompt sequence 1; look at the batches that carried the prompt.
    const prefill = batches.slice(firstBatch).filter((batch) => batch.has(1));
    expect(prefill.reduce((sum, batch) => sum + (batch.get(1) ?? 0), 0)).toBe(promptTokens);
    // About 750 tokens: more than a step holds beside the stream (the batch, 512, less its token).
    expect(promptTokens).toBeGreaterThan(512);
    expect(prefill.length).toBeGreaterThanOrEqual(2);
    // Every chunk shared its step with the stream, which therefore got a token per chunk.
    expect(prefill.filter((batch) => !batch.has(0))).toEqual([]);
    expect(tokensDuring).toBeGreaterThanOrEqual(prefill.length - 1);
  });

  it("stops evaluating a prompt within a chunk of an abort", async () => {
    const controller = new AbortController();
    const firstBatch = batches.length;
    onBatch = () => {
      if (batches.length - firstBatch === 2) controller.abort();
    };
    const events: GenerationEvent[] = await readEvents(model.complete(longPrompt(500, 4), { signal: controller.signal }));
    onBatch = undefined;
    const evaluated = batches.slice(firstBatch).reduce((sum, batch) => sum + [...batch.values()].reduce((a, b) => a + b, 0), 0);
    expect(finishOf(events).reason).toBe("aborted");
    expect(batches.length - firstBatch).toBe(2);
    expect(evaluated).toBeLessThan(finishOf(events).usage.inputTokens);
  });

  it("stops the step in flight of an abandoned prompt, and the context goes on", async () => {
    const probe = longPrompt(12, 8);
    const before = await readEvents(model.complete(probe));
    const controller = new AbortController();
    const firstBatch = batches.length;
    const outcomes: Array<Promise<string>> = [];
    onDecode = (outcome) => {
      outcomes.push(outcome.then(() => "completed", () => "stopped"));
      // The second step is a full prompt chunk, on llama.cpp's thread for far longer than one turn of the event loop.
      if (batches.length - firstBatch === 2) setImmediate(() => controller.abort());
    };
    const events = await readEvents(model.complete(longPrompt(500, 4), { signal: controller.signal }));
    onDecode = undefined;
    expect(finishOf(events).reason).toBe("aborted");
    expect(await Promise.all(outcomes)).toEqual(["completed", "stopped"]);
    // Both steps were prompt tokens alone, each at least the planner's smallest alone step.
    expect(batches.slice(firstBatch).map((batch) => [...batch.values()][0]! >= 128)).toEqual([true, true]);
    // Same greedy answer as before: the interrupted step left the context sound.
    const after = await readEvents(model.complete(probe));
    expect(textOf(after)).toBe(textOf(before));
    expect(textOf(after).length).toBeGreaterThan(0);
  });
});

const textOf = (events: GenerationEvent[]) => events.map((event) => (event.type === "text-delta" ? event.text : "")).join("");
