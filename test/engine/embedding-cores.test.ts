/**
 * An embedding batch beside a generating request on the CPU (real default model, two threads): the embedding
 * context's steps take the cores the main context leaves them (core-share.ts), so each side steps on one of the two
 * threads while both work, and the vectors are those of a batch alone. Without the split both stepped on two threads
 * at once, on 2 cores waiting out each other's time slices at every barrier.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import type { Llama } from "node-llama-cpp";
import type { CoreSplit } from "../../src/engine/backends/llama-cpp/core-share.js";
import { loadLlamaCppModel, type LlamaCppModel } from "../../src/engine/backends/llama-cpp/llama-cpp-model.js";
import { openLlama } from "../../src/engine/backends/llama-cpp/load-llama.js";
import { realModelPath } from "../helpers/real-model.js";
import { textOf } from "../helpers/stream-events.js";

let llama: Llama;
let model: LlamaCppModel;

beforeAll(async () => {
  llama = await openLlama(false);
  model = await loadLlamaCppModel({ id: "m", path: realModelPath(), llama, parallel: 2, ctxSize: 1024, threads: 2, prefixCache: false });
});

afterAll(async () => {
  await model?.dispose();
  await llama?.dispose();
});

const texts = Array.from({ length: 6 }, (_, i) => `Note ${i}: the kiln fires clay into stoneware at high heat.`);

it("splits the model's cores between its main context and an embedding batch while both work", async () => {
  const cores = (model as unknown as { parts: { cores: CoreSplit } }).parts.cores;
  const embeddingThreads: number[] = [];
  const mainThreads: number[] = [];
  const embeddingCores = cores.embeddingCores.bind(cores);
  const mainCores = cores.mainCores.bind(cores);
  // Main steps count from the batch's first step to its end.
  let embedding = false;
  cores.embeddingCores = () => { const n = embeddingCores(); embeddingThreads.push(n); embedding = true; return n; };
  cores.mainCores = () => { const n = mainCores(); if (embedding) mainThreads.push(n); return n; };

  // A generation that outlasts the batch, and the batch once the generation has its first token.
  let started: () => void = () => {};
  const firstToken = new Promise<void>((resolve) => { started = resolve; });
  const generation = (async () => {
    const events = [];
    for await (const event of model.complete({ model: "m", prompt: "Story: once upon a time,", maxTokens: 400, sampling: { temperature: 0, ignoreEos: true } })) {
      events.push(event);
      if (event.type === "text-delta") started();
    }
    return events;
  })();
  await firstToken;
  const beside = await model.embed({ model: "m", inputs: texts });
  embedding = false;
  const events = await generation;
  expect(textOf(events).length).toBeGreaterThan(0);
  expect(beside.vectors).toHaveLength(texts.length);
  expect(embeddingThreads.length).toBeGreaterThan(0);
  expect({ embeddingThreads: [...new Set(embeddingThreads)], mainThreads: [...new Set(mainThreads)] }).toEqual({ embeddingThreads: [1], mainThreads: [1] });

  // Alone (on as many threads as the process gets), the same vectors.
  const alone = await model.embed({ model: "m", inputs: texts });
  alone.vectors.forEach((vector, i) => vector.forEach((value, j) => expect(value).toBeCloseTo(beside.vectors[i]![j]!, 4)));
});
