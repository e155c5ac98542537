/**
 * Two real models in one process share its cores (core-budget.ts): while a second model loads, and then while it
 * serves, the first model's steps run on one of 2 cores, the second model's steps beside its stream too, and each
 * gets both cores back once the other is idle. The budget is told that the process gets every core of the machine
 * (no /proc readings), so what other processes do meanwhile cannot change the threads chosen, only the timing. The
 * llama.cpp backend gives the models it loads one such budget.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import type { Llama } from "node-llama-cpp";
import type { LoadedModel } from "../../src/engine/index.js";
import { CoreBudget } from "../../src/engine/backends/llama-cpp/core-budget.js";
import { openLlamaCppBackend } from "../../src/engine/backends/llama-cpp/llama-cpp-backend.js";
import { loadLlamaCppModel, type LlamaCppModel } from "../../src/engine/backends/llama-cpp/llama-cpp-model.js";
import { openLlama } from "../../src/engine/backends/llama-cpp/load-llama.js";
import { nativeContextOf, watchBatches } from "../helpers/native-batches.js";
import { coderModelPath, realModelPath } from "../helpers/real-model.js";
import { readEvents } from "../helpers/stream-events.js";

const coderPath = coderModelPath();
let llama: Llama;

beforeAll(async () => {
  llama = await openLlama(false);
});

afterAll(async () => {
  await llama?.dispose();
});

/** One decode step as it began: its threads, what the test was doing, and its place among every model's steps. */
interface Step { threads: number; phase: string; request: number; order: number }

/** Records each decode step of `model` into `steps` as it begins, with what `now()` says the test is doing. */
function watchSteps(model: LoadedModel, steps: Step[], now: () => Omit<Step, "threads">): void {
  const native = nativeContextOf(model);
  watchBatches(native, { onDecode: () => steps.push({ threads: Number(native.getThreads!()), ...now() }) });
}

const generate = (model: LoadedModel, prompt: string, maxTokens: number) =>
  readEvents(model.complete({ model: model.info.id, prompt, maxTokens, sampling: { temperature: 0 } }));

it.skipIf(!coderPath)("gives a serving model one of 2 cores while another loads and serves, and both cores when alone", async () => {
  const budget = new CoreBudget(2, () => undefined);
  const load = (id: string, path: string) =>
    loadLlamaCppModel({ id, path, llama, parallel: 1, ctxSize: 1024, threads: 2, prefixCache: false, coreBudget: budget });
  let phase = "alone";
  let request = 0;
  let order = 0;
  const watch = (model: LlamaCppModel, steps: Step[]) => watchSteps(model, steps, () => ({ phase, request, order: order++ }));
  const serving = await load("serving", realModelPath());
  const servingSteps: Step[] = [];
  const coderSteps: Step[] = [];
  watch(serving, servingSteps);
  let coder: LlamaCppModel | undefined;
  try {
    await generate(serving, "Once upon a time", 8);
    // The serving model streams without a pause while the other model loads and then answers one request.
    let streaming = true;
    const stream = (async () => {
      while (streaming) {
        request += 1;
        await generate(serving, "Once upon a time, in a village of potters,", 64);
      }
    })();
    phase = "loading";
    coder = await load("coder", coderPath!);
    phase = "beside";
    watch(coder, coderSteps);
    await generate(coder, "def add(a, b):", 8);
    streaming = false;
    await stream;
    phase = "after";
    request += 1;
    await generate(coder, "def add(a, b):", 8);
    await generate(serving, "Once upon a time", 8);

    const threads = (steps: Step[]) => steps.map((step) => step.threads);
    const during = (steps: Step[], name: string) => steps.filter((step) => step.phase === name);
    // Alone: both cores. While the other model loads: one.
    expect(threads(during(servingSteps, "alone"))).toEqual(during(servingSteps, "alone").map(() => 2));
    expect(during(servingSteps, "loading").length).toBeGreaterThan(0);
    expect(new Set(threads(during(servingSteps, "loading")))).toEqual(new Set([1]));
    // While the other serves: the serving model's steps between the coder's first and last step, and the coder's steps
    // between two steps of one serving request (its prompt's included), each on one core.
    const coderBeside = during(coderSteps, "beside");
    const servingBetween = servingSteps.filter((step) => step.order > coderBeside[0]!.order && step.order < coderBeside.at(-1)!.order);
    const coderBetween = coderBeside.filter((step) => servingSteps.some((a) => a.order < step.order && servingSteps.some((b) => b.order > step.order && b.request === a.request)));
    expect(servingBetween.length).toBeGreaterThan(0);
    expect(coderBetween.length).toBeGreaterThan(0);
    expect(new Set([...threads(servingBetween), ...threads(coderBetween)])).toEqual(new Set([1]));
    // Each alone again, the other idle: both cores.
    expect(new Set([...threads(during(coderSteps, "after")), ...threads(during(servingSteps, "after"))])).toEqual(new Set([2]));
  } finally {
    await coder?.dispose();
    await serving.dispose();
  }
}, 180_000);

it.skipIf(!coderPath)("gives the models of one llama.cpp backend one budget: a serving model steps on one thread while another loads", async () => {
  // The process's share is read from this machine here: both cores where it is quiet (then two models or a load
  // beside a model halve them), one where other work holds a core.
  const backend = await openLlamaCppBackend({ threads: 2, parallel: 1, ctxSize: 1024, prefixCache: false, gpu: false, ids: () => "id" });
  const serving = await backend.load({ id: "serving", path: realModelPath(), aliases: [] });
  const steps: Step[] = [];
  let loading = false;
  watchSteps(serving, steps, () => ({ phase: loading ? "loading" : "", request: 0, order: steps.length }));
  let coder: LoadedModel | undefined;
  try {
    let streaming = true;
    const stream = (async () => {
      while (streaming) await generate(serving, "Once upon a time, in a village of potters,", 64);
    })();
    loading = true;
    coder = await backend.load({ id: "coder", path: coderPath!, aliases: [] });
    loading = false;
    streaming = false;
    await stream;
    const duringLoad = steps.filter((step) => step.phase === "loading");
    expect(duringLoad.length).toBeGreaterThan(0);
    expect(new Set(duringLoad.map((step) => step.threads))).toEqual(new Set([1]));
  } finally {
    await coder?.dispose();
    await serving.dispose();
    await backend.dispose();
  }
}, 180_000);
