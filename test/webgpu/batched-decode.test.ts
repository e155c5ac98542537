/**
 * Decode steps of several sequences in one batch, on the default model (SmolLM2-135M-Instruct): three prompts of
 * different lengths in three slots of one KV arena, then greedy steps where each batch holds one token of every
 * sequence, each at its own position. Every sequence's batched logits must be those of the same sequence decoded
 * alone by its own plan (f32 both, summation order apart), for the plan of this adapter and for a real GPU's plan
 * (split-K GEMMs, attention with a workgroup per (head, token)). Then the same through the model: concurrent
 * requests decode in batches and answer as each does alone.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Llama, LlamaModel } from "node-llama-cpp";
import { openGpuDevice, type GpuDevice } from "../../src/engine/backends/webgpu/device.js";
import { openGgufTensors } from "../../src/engine/backends/webgpu/gguf/read-tensors.js";
import { readLlamaConfig, type LlamaConfig } from "../../src/engine/backends/webgpu/model/llama-config.js";
import { createTokenBatch, DecodePlan } from "../../src/engine/backends/webgpu/plan/decode.js";
import { uploadDecodeWeights, type DecodeWeights } from "../../src/engine/backends/webgpu/plan/decode-weights.js";
import { createKvArena, destroyKvArena } from "../../src/engine/backends/webgpu/plan/kv-arena.js";
import { WeightArena } from "../../src/engine/backends/webgpu/plan/weight-arena.js";
import { loadWebGpuModel, type WebGpuModel } from "../../src/engine/backends/webgpu/webgpu-model.js";
import { sequentialIds } from "../../src/lib/ids.js";
import { realModelPath } from "../helpers/real-model.js";
import { readEvents, textOf, userRequest } from "../helpers/stream-events.js";
import { asRealGpu, webGpuAvailable } from "../helpers/webgpu.js";

const CTX = 256;
const STEPS = 6;
const PROMPTS = [
  "<|im_start|>user\nName three colours.<|im_end|>\n<|im_start|>assistant\n",
  "<|im_start|>user\nWrite a haiku about a kiln firing pottery through the night, with ash and embers.<|im_end|>\n<|im_start|>assistant\n",
  "<|im_start|>user\nWhat is 2 + 2? Answer with one word.<|im_end|>\n<|im_start|>assistant\n",
];
/** Largest |Δ logit| between batched and lone decoding, relative to the largest |logit|: f32 rounding only. */
const LOGIT_TOLERANCE = 1e-4;

const available = await webGpuAvailable();
let llama: Llama;
let vocab: LlamaModel;
let gpu: GpuDevice;
let weightArena: WeightArena;
let config: LlamaConfig;
let weights: DecodeWeights;

beforeAll(async () => {
  if (!available) return;
  const path = realModelPath();
  const { getLlama } = await import("node-llama-cpp");
  llama = await getLlama({ build: "never", gpu: false });
  vocab = await llama.loadModel({ modelPath: path, vocabOnly: true });
  gpu = await openGpuDevice();
  const file = await openGgufTensors(path);
  config = readLlamaConfig(file.header);
  weightArena = new WeightArena(gpu.device);
  weights = await uploadDecodeWeights(file, config, weightArena);
});
afterAll(async () => {
  weightArena?.destroy();
  gpu?.destroy();
  await vocab?.dispose();
  await llama?.dispose();
});

describe.skipIf(!available).each([
  ["this adapter's plan", () => gpu],
  ["a real GPU's plan", () => asRealGpu(gpu)],
] as const)("a decode step of three sequences in one batch, %s", (_name, device) => {
  it("gives every sequence the logits it gets decoded alone", async () => {
    const prompts = PROMPTS.map((p) => vocab.tokenize(p, true) as number[]);
    const arena = createKvArena(gpu.device, config, CTX, prompts.length);
    const batch = createTokenBatch(device(), config, weights, arena, 16);
    const shared = { arena, batch };
    const batched = prompts.map((_, slot) => new DecodePlan(device(), config, weights, CTX, {}, { ...shared, slot }));
    const alone = prompts.map(() => new DecodePlan(device(), config, weights, CTX));
    try {
      for (const [i, prompt] of prompts.entries()) {
        await batched[i]!.prefill(prompt.slice(0, -1));
        await alone[i]!.prefill(prompt.slice(0, -1));
      }
      let inputs = prompts.map((p) => p.at(-1)!);
      let worst = 0;
      for (let step = 0; step < STEPS; step++) {
        const places = batched.map((plan) => plan.nextPlace());
        const result = await batch.decode(inputs, places, [true, true, true]);
        const expected = [];
        for (const [i, plan] of alone.entries()) expected.push(await plan.step(inputs[i], { logits: true }));
        for (const [i, e] of expected.entries()) {
          const scale = e.logits!.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
          const diff = e.logits!.reduce((m, v, k) => Math.max(m, Math.abs(v - result.logits[i]![k]!)), 0);
          worst = Math.max(worst, diff / scale);
          expect(result.ids[i], `sequence ${i}, step ${step}`).toBe(e.token);
        }
        batched.forEach((plan) => plan.position++);
        inputs = expected.map((e) => e.token);
      }
      console.info(`batched vs alone, worst relative logit difference: ${worst.toExponential(2)}`);
      expect(worst).toBeLessThanOrEqual(LOGIT_TOLERANCE);
    } finally {
      for (const plan of [...batched, ...alone]) plan.destroy();
      batch.destroy();
      destroyKvArena(arena);
    }
  }, 300_000);
});

describe.skipIf(!available)("concurrent requests to a WebGPU model", () => {
  let model: WebGpuModel;
  beforeAll(async () => {
    if (available) model = await loadWebGpuModel({ id: "smol", path: realModelPath(), gpu, ctxSize: 512, parallel: 3, ids: sequentialIds() });
  });
  afterAll(async () => model?.dispose());

  it("decode in shared steps and answer as each request does alone", async () => {
    const requests = ["Name three colours.", "Write a haiku about a kiln.", "What is 2 + 2?"].map((text) => userRequest("smol", text, { maxTokens: 16 }));
    const alone: string[] = [];
    for (const request of requests) alone.push(textOf(await readEvents(model.generate(request))));
    const before = model.stepStats();
    expect(before.tokens).toBe(before.steps); // alone, one token a step
    const together = await Promise.all(requests.map(async (request) => textOf(await readEvents(model.generate(request)))));
    expect(together).toEqual(alone);
    // The three ran side by side: most of their tokens came out of steps that decoded more than one sequence.
    const after = model.stepStats();
    expect((after.tokens - before.tokens) / (after.steps - before.steps)).toBeGreaterThan(1.5);
  }, 300_000);
});
