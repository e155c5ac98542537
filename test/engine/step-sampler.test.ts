/**
 * One-call sampling of a decode step's sequences (step-sampler.ts, native/step-sampler.c) on the real default model,
 * four sequences in one context: the tokens are those node-llama-cpp's own sampler draws (seeded and greedy), the
 * plain sequences of a step are sampled by one native call, and requests that need node-llama-cpp's sampler (a
 * logit bias, logprobs) keep it beside them. A CPU model samples every step on the calling thread; eight sequences
 * sampled as off the CPU (small steps inline) take the work items.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Llama } from "node-llama-cpp";
import { loadLlamaCppModel, type LlamaCppModel } from "../../src/engine/backends/llama-cpp/llama-cpp-model.js";
import { openLlama } from "../../src/engine/backends/llama-cpp/load-llama.js";
import type { StepSampler } from "../../src/engine/backends/llama-cpp/step-sampler.js";
import type { CompletionRequest, GenerationEvent } from "../../src/engine/index.js";
import { realModelPath, testThreads } from "../helpers/real-model.js";
import { finishOf, readEvents, textOf } from "../helpers/stream-events.js";

let llama: Llama;
/** Samples plain sequences natively. */
let together: LlamaCppModel;
/** Samples every sequence through node-llama-cpp. */
let alone: LlamaCppModel;

const load = (stepSampler: boolean) => loadLlamaCppModel({
  id: "smollm2-135m", path: realModelPath(), llama, parallel: 4, ctxSize: 512, threads: testThreads(), prefixCache: false, stepSampler,
});

beforeAll(async () => {
  llama = await openLlama(false);
  together = await load(true);
  alone = await load(false);
});

afterAll(async () => {
  await together?.dispose();
  await alone?.dispose();
  await llama?.dispose();
});

const samplerOf = (model: LlamaCppModel) => (model as unknown as { runtime: { sampler?: StepSampler } }).runtime.sampler;

const request = (topic: string, sampling: CompletionRequest["sampling"], extra: Partial<CompletionRequest> = {}): CompletionRequest => ({
  model: "smollm2-135m", prompt: `A few facts about ${topic}:\n1.`, maxTokens: 32, sampling, ...extra,
});

/** Three plain requests (seeded at two temperatures, and greedy), then one with a logit bias and one with logprobs. */
const PLAIN = [
  request("the moon", { temperature: 0.8, seed: 11 }),
  request("rivers", { temperature: 1.3, topK: 100, topP: 0.9, minP: 0, seed: 12 }),
  request("bread", { temperature: 0 }),
];
const OWN_SAMPLER = [
  request("clocks", { temperature: 0.8, seed: 13, logitBias: { 28: -100 } }),
  request("glass", { temperature: 0 }, { logprobs: 2 }),
];

const runAll = (model: LlamaCppModel): Promise<GenerationEvent[][]> =>
  Promise.all([...PLAIN, ...OWN_SAMPLER].map((r) => readEvents(model.complete(r))));

describe("the step sampler", () => {
  it("is attached where the native module is built", () => {
    expect(samplerOf(together)).toBeDefined();
    expect(samplerOf(alone)).toBeUndefined();
  });

  it("draws the tokens node-llama-cpp draws, sampling a step's plain sequences in one call and no others", async () => {
    const sampler = samplerOf(together)!;
    const before = { ...sampler.stats };
    const natively = await runAll(together);
    const calls = sampler.stats.calls - before.calls;
    const sequences = sampler.stats.sequences - before.sequences;
    const reference = await runAll(alone);
    for (const [i, events] of natively.entries()) {
      expect(textOf(events)).toBe(textOf(reference[i]!));
      expect(finishOf(events)).toEqual(finishOf(reference[i]!));
    }
    // Logprobs came through node-llama-cpp's sampler as before, and the bias held.
    const logprobs = (events: GenerationEvent[]) => events.flatMap((e) => (e.type === "text-delta" ? e.logprobs ?? [] : []));
    expect(logprobs(natively[4]!).length).toBeGreaterThan(0);
    expect(logprobs(natively[4]!)).toEqual(logprobs(reference[4]!));
    // Every token of the plain requests (and the end-of-text token of those that stopped) was sampled natively, and
    // nothing of the others.
    const plainTokens = natively.slice(0, PLAIN.length).map((events) => finishOf(events));
    const generated = plainTokens.reduce((sum, finish) => sum + finish.usage.outputTokens, 0);
    const stopped = plainTokens.filter((finish) => finish.reason === "stop").length;
    expect(sequences).toBeGreaterThanOrEqual(generated);
    expect(sequences).toBeLessThanOrEqual(generated + stopped);
    // The plain sequences shared their steps: fewer calls than sequences sampled.
    expect(calls).toBeLessThan(sequences);
    expect(calls).toBeGreaterThanOrEqual(Math.max(...plainTokens.map((finish) => finish.usage.outputTokens)));
  });

  it("samples every step of a CPU model on the calling thread, and large steps elsewhere in work items, drawing the same tokens", async () => {
    // Eight sequences of a 49,152-token vocabulary hold more logits than the native module samples inline by size.
    const wide = (stepSampler: boolean | "small-steps") => loadLlamaCppModel({
      id: "smollm2-135m", path: realModelPath(), llama, parallel: 8, ctxSize: 256, threads: testThreads(), prefixCache: false, stepSampler,
    });
    const requests = Array.from({ length: 8 }, (_, i) => request(`topic ${i}`, i % 2 ? { temperature: 0 } : { temperature: 0.9, seed: 20 + i }));
    const [onCpu, inWorkItems, reference] = [await wide(true), await wide("small-steps"), await wide(false)];
    try {
      const calls = [watchCalls(onCpu), watchCalls(inWorkItems)];
      const expected = await Promise.all(requests.map((r) => readEvents(reference.complete(r))));
      for (const model of [onCpu, inWorkItems]) {
        const drawn = await Promise.all(requests.map((r) => readEvents(model.complete(r))));
        expect(drawn.map(textOf)).toEqual(expected.map(textOf));
      }
      const [cpuCalls, workItemCalls] = await Promise.all(calls.map((watched) => Promise.all(watched)));
      // Steps of more than five sequences: the CPU model sampled them before the call returned, the other did not.
      const large = (made: SampleCall[]) => made.filter((call) => call.sequences > 5);
      expect(large(cpuCalls!).length).toBeGreaterThan(0);
      expect(large(cpuCalls!).every((call) => call.sampledInCall)).toBe(true);
      expect(large(workItemCalls!).length).toBeGreaterThan(0);
      expect(large(workItemCalls!).some((call) => call.sampledInCall)).toBe(false);
    } finally {
      await onCpu.dispose();
      await inWorkItems.dispose();
      await reference.dispose();
    }
  });
});

interface SampleCall { sequences: number; sampledInCall: boolean }

/**
 * Records each native sampling call of `model`'s step sampler: its sequences, and whether its promise was already
 * resolved when the call returned (sampled on the calling thread) rather than later (in work items).
 */
function watchCalls(model: LlamaCppModel): Array<Promise<SampleCall>> {
  const calls: Array<Promise<SampleCall>> = [];
  const sampler = samplerOf(model) as unknown as { native: { sampleStep: (...args: unknown[]) => Promise<Int32Array> } };
  const native = sampler.native;
  const sampleStep = native.sampleStep.bind(native);
  const watched = (...args: unknown[]) => {
    const sampled = sampleStep(...args);
    // An already resolved promise settles the race before the marker, which joins it second.
    const pending = Symbol("pending");
    const first = Promise.race([sampled, Promise.resolve(pending)]);
    calls.push(first.then((won) => ({ sequences: (args[2] as Int32Array).length, sampledInCall: won !== pending })));
    return sampled;
  };
  sampler.native = Object.create(native, { sampleStep: { value: watched } });
  return calls;
}
