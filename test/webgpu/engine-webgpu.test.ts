/**
 * The engine's backend contract on the WebGPU backend, on a tiny generated F32 llama model (fast on Mesa's
 * software renderer): event grammar, real usage, greedy agreement with the llama.cpp backend on the same file,
 * stop sequences, abort, prefix reuse, seeded sampling, generating past the end of text (ignoreEos), and
 * grammar-constrained output as on llama.cpp.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createEngine, type Engine, type GenerationEvent } from "../../src/engine/index.js";
import { testThreads } from "../helpers/real-model.js";
import { TINY_EOS_TOKEN, writeTinyGguf } from "../helpers/tiny-gguf.js";
import { webGpuAvailable } from "../helpers/webgpu.js";
import { finishOf, readEvents, startOf, textOf, userRequest } from "../helpers/stream-events.js";

const available = await webGpuAvailable();
const dir = mkdtempSync(join(tmpdir(), "kiln-webgpu-engine-"));
const CTX_SIZE = 1024;
let gpu: Engine;
let cpu: Engine;

beforeAll(async () => {
  if (!available) return;
  const path = await writeTinyGguf(join(dir, "tiny.gguf"), 5, { outputScale: 4 });
  gpu = await createEngine({ models: [{ id: "tiny", path, backend: "webgpu" }], parallel: 2, ctxSize: CTX_SIZE });
  cpu = await createEngine({ models: [{ id: "tiny", path }], parallel: 1, ctxSize: CTX_SIZE, threads: testThreads() });
});

afterAll(async () => {
  await gpu?.close();
  await cpu?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe.skipIf(!available)("the WebGPU backend in the engine", () => {
  it("describes the model as served by webgpu, with the adapter and the dispatches per token", () => {
    const [info] = gpu.listModels();
    expect(info).toMatchObject({ id: "tiny", backend: "webgpu", contextSize: CTX_SIZE, trainContextSize: 512 });
    expect(info?.details).toMatchObject({ architecture: "llama", layers: 2, parallel: 2 });
    expect(info?.details?.dispatchesPerToken).toBeGreaterThan(0);
  });

  it("streams well-formed events with real usage and the same greedy text as llama.cpp on the same file", async () => {
    const request = userRequest("tiny", "hello there", { maxTokens: 12 });
    const events = await readEvents(gpu.generate(request));
    const expected = await readEvents(cpu.generate(request));
    expect(startOf(events).inputTokens).toBe(await gpu.countTokens(request));
    expect(startOf(events).inputTokens).toBe(startOf(expected).inputTokens);
    expect(textOf(events)).toBe(textOf(expected));
    expect(finishOf(events).usage.outputTokens).toBe(finishOf(expected).usage.outputTokens);
  });

  it("reads a client's turn marker as its ten plain characters on both backends, never as a control token", async () => {
    for (const engine of [gpu, cpu]) {
      const clean = await engine.countTokens(userRequest("tiny", "hi"));
      const marked = userRequest("tiny", "hi<|im_end|>", { maxTokens: 1 });
      expect(await engine.countTokens(marked)).toBe(clean + "<|im_end|>".length);
      expect(startOf(await readEvents(engine.generate(marked))).inputTokens).toBe(clean + "<|im_end|>".length);
    }
  });

  it("decodes several sequences at once, each giving what it gives alone", async () => {
    const prompts = ["one", "two words", "three little words"].map((text) => userRequest("tiny", text, { maxTokens: 6 }));
    const alone = [];
    for (const request of prompts) alone.push(textOf(await readEvents(gpu.generate(request))));
    const together = await Promise.all(prompts.map(async (request) => textOf(await readEvents(gpu.generate(request)))));
    expect(together).toEqual(alone);
    expect(gpu.stats().activeSequences).toBe(0);
  });

  it("reuses the cached prompt prefix of the previous request and reports it", async () => {
    const first = userRequest("tiny", "the same opening words, then one ending", { maxTokens: 2 });
    const second = userRequest("tiny", "the same opening words, then another ending", { maxTokens: 2 });
    await readEvents(gpu.generate(first));
    const start = startOf(await readEvents(gpu.generate(second)));
    expect(start.cachedInputTokens).toBeGreaterThan(5);
    expect(start.cachedInputTokens).toBeLessThan(start.inputTokens);
  });

  it("ends at a stop sequence taken from a greedy run, reporting it and leaving it out", async () => {
    const request = userRequest("tiny", "hello there", { maxTokens: 12 });
    const text = textOf(await readEvents(gpu.generate(request)));
    const stop = text.slice(3, 5);
    expect(stop.length).toBe(2);
    const events = await readEvents(gpu.generate({ ...request, stop: [stop] }));
    expect(finishOf(events)).toMatchObject({ reason: "stop-sequence", stopSequence: stop });
    expect(textOf(events)).toBe(text.slice(0, text.indexOf(stop)));
  });

  it("generates past the end of text with ignoreEos, to max tokens", async () => {
    // Greedy with the end-of-text token's logit raised (a bias), so the tiny model ends within a few tokens.
    const ending = userRequest("tiny", "hello there", { maxTokens: 24, sampling: { temperature: 0, logitBias: { [TINY_EOS_TOKEN]: 8 } } });
    const endedEvents = await readEvents(gpu.generate(ending));
    const ended = finishOf(endedEvents);
    expect(ended.reason).toBe("stop");
    expect(ended.usage.outputTokens).toBeLessThan(24);
    const past = await readEvents(gpu.generate({ ...ending, sampling: { ...ending.sampling, ignoreEos: true } }));
    expect(finishOf(past)).toMatchObject({ reason: "length", usage: { outputTokens: 24 } });
    expect(textOf(past).startsWith(textOf(endedEvents))).toBe(true);
  });

  it("stops on abort within a token and serves the next request", async () => {
    const controller = new AbortController();
    const events = [];
    for await (const event of gpu.generate(userRequest("tiny", "count", { maxTokens: 64 }), { signal: controller.signal })) {
      events.push(event);
      if (event.type === "text-delta") controller.abort();
    }
    expect(finishOf(events).reason).toBe("aborted");
    expect(finishOf(events).usage.outputTokens).toBeLessThan(64);
    expect(finishOf(await readEvents(gpu.generate(userRequest("tiny", "again", { maxTokens: 2 })))).reason).toBe("length");
  });

  it("repeats a seeded sample and samples with temperature, top-k and top-p", async () => {
    const request = userRequest("tiny", "sample", { maxTokens: 8, sampling: { temperature: 1.2, topK: 20, topP: 0.9, seed: 42 } });
    const first = textOf(await readEvents(gpu.generate(request)));
    expect(textOf(await readEvents(gpu.generate(request)))).toBe(first);
  });

  it("constrains output with the request's grammar exactly as llama.cpp does on the same file", async () => {
    const tools = [{ name: "lookup", description: "Look it up", inputSchema: { type: "object", properties: { q: { type: "string", maxLength: 8 } }, required: ["q"] } }];
    const requests = [
      userRequest("tiny", "hi", { tools, toolChoice: { type: "required" }, maxTokens: 96 }),
      userRequest("tiny", "hi", { responseFormat: { type: "json" }, maxTokens: 12 }),
      userRequest("tiny", "hi", { responseFormat: { type: "json" }, maxTokens: 12, sampling: { temperature: 1, seed: 5 } }),
    ];
    const [forced, json, sampled] = await Promise.all(requests.map(async (request) => readEvents(gpu.generate(request))));
    const calls = (events: GenerationEvent[]) => events.map((event) => (event.type === "tool-call-delta" ? event.json : event.type === "text-delta" ? event.text : "")).join("");
    expect(calls(forced!)).toBe(calls(await readEvents(cpu.generate(requests[0]!))));
    const end = forced!.find((event) => event.type === "tool-call-end");
    expect(end).toMatchObject({ input: { q: expect.any(String) } });
    expect(textOf(json!)).toBe(textOf(await readEvents(cpu.generate(requests[1]!))));
    expect(textOf(json!)).toMatch(/^\{/);
    expect(textOf(sampled!)).toMatch(/^\{/);
  });

  it("reports logprobs on raw completions, and serves tools with auto choice (calls parsed from text)", async () => {
    const events = await readEvents(gpu.complete({ model: "tiny", prompt: "hello", maxTokens: 3, logprobs: 2, sampling: { temperature: 0 } }));
    const logprobs = events.flatMap((event) => (event.type === "text-delta" ? event.logprobs ?? [] : []));
    expect(logprobs.length).toBe(finishOf(events).usage.outputTokens);
    for (const entry of logprobs) {
      expect(entry.logprob).toBeLessThanOrEqual(0);
      expect(entry.top).toHaveLength(2);
      expect(entry.top[0]!.logprob).toBeCloseTo(entry.logprob, 5); // greedy: the sampled token is the most likely
    }
    const tools = [{ name: "lookup", description: "Look it up", inputSchema: { type: "object" } }];
    expect(finishOf(await readEvents(gpu.generate(userRequest("tiny", "hi", { tools, maxTokens: 2 })))).reason).toBe("length");
  });

  it("refuses a prompt longer than the context before it starts", async () => {
    const long = userRequest("tiny", "word ".repeat(1200));
    await expect(readEvents(gpu.generate(long))).rejects.toMatchObject({ code: "context_overflow" });
  });
});
