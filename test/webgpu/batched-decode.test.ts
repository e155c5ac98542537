/**
 * Decode steps of several sequences in one batch, on the default model (SmolLM2-135M-Instruct): three prompts of
 * different lengths in three slots of one KV arena, then greedy steps where each batch holds one token of every
 * sequence, each at its own position. Every sequence's batched logits must be those of the same sequence decoded
 * alone by its own plan (f32 both, summation order apart), for the plan of this adapter and for a real GPU's plan
 * (split-K GEMMs, attention with a workgroup per (head, token), a sampled row's best candidates selected on the GPU).
 * Then the same through the model: concurrent requests, greedy and seeded sampled, decode in batches and answer as
 * each does alone.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { LlamaModel } from "node-llama-cpp";
import type { GpuDevice } from "../../src/engine/backends/webgpu/device.js";
import type { LlamaConfig } from "../../src/engine/backends/webgpu/model/llama-config.js";
import { createTokenBatch, DecodePlan } from "../../src/engine/backends/webgpu/plan/decode.js";
import type { DecodeWeights } from "../../src/engine/backends/webgpu/plan/decode-weights.js";
import { createKvArena, destroyKvArena } from "../../src/engine/backends/webgpu/plan/kv-arena.js";
import { TOP_CANDIDATES } from "../../src/engine/backends/webgpu/kernels/top-k.js";
import { loadWebGpuModel, type WebGpuModel } from "../../src/engine/backends/webgpu/webgpu-model.js";
import { sequentialIds } from "../../src/lib/ids.js";
import { realModelPath } from "../helpers/real-model.js";
import { readEvents, textOf, userRequest } from "../helpers/stream-events.js";
import { asRealGpu, openDefaultModelOnGpu, webGpuAvailable } from "../helpers/webgpu.js";

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
let opened: Awaited<ReturnType<typeof openDefaultModelOnGpu>>;
let vocab: LlamaModel;
let gpu: GpuDevice;
let config: LlamaConfig;
let weights: DecodeWeights;

beforeAll(async () => {
  if (available) ({ vocab, gpu, config, weights } = opened = await openDefaultModelOnGpu());
});
afterAll(async () => opened?.dispose());

describe.skipIf(!available).each([
  ["this adapter's plan", () => gpu],
  ["a real GPU's plan", () => asRealGpu(gpu)],
] as const)("a decode step of three sequences in one batch, %s", (_name, device) => {
  it("gives every sequence the logits it gets decoded alone", async () => {
    const prompts = PROMPTS.map((p) => vocab.tokenize(p, true) as number[]);
    const arena = createKvArena(gpu.device, config, CTX, prompts.length);
    const batch = createTokenBatch(device(), config, weights, arena, { batch: 16, decodeRows: prompts.length });
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
        // The middle sequence asks for its best candidates only: a GPU plan selects them, elsewhere the row comes.
        const result = await batch.decode(inputs, places, ["logits", "top", "logits"]);
        const expected = [];
        for (const [i, plan] of alone.entries()) expected.push(await plan.step(inputs[i], { logits: true }));
        for (const [i, e] of expected.entries()) {
          const scale = e.logits!.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
          const top = result.top[i];
          if (top) {
            expect(top).toHaveLength(TOP_CANDIDATES);
            expect(top[0]!.id).toBe(result.ids[i]);
            for (const { id, logit } of top) worst = Math.max(worst, Math.abs(logit - e.logits![id]!) / scale);
            // They are the row's best: none left out beats the last kept by more than rounding.
            const kept = new Set(top.map((c) => c.id));
            const outside = e.logits!.reduce((m, v, id) => (kept.has(id) ? m : Math.max(m, v)), -Infinity);
            expect(outside).toBeLessThanOrEqual(top.at(-1)!.logit + LOGIT_TOLERANCE * scale);
          } else {
            const diff = e.logits!.reduce((m, v, k) => Math.max(m, Math.abs(v - result.logits[i]![k]!)), 0);
            worst = Math.max(worst, diff / scale);
          }
          expect(result.ids[i], `sequence ${i}, step ${step}`).toBe(e.token);
        }
        expect(result.top[1] !== undefined, "candidates selected on the GPU").toBe(!device().info.software);
        batched.forEach((plan) => plan.position++);
        inputs = expected.map((e) => e.token);
      }
      // A sequence decoded alone asks for its best candidates: selected on a GPU, its logits elsewhere.
      const lone = await alone[0]!.step(inputs[0], { top: true });
      if (device().info.software) expect(lone.logits).toBeDefined();
      else expect(lone.top?.[0]?.id).toBe(lone.token);
      console.info(`batched vs alone, worst relative logit difference: ${worst.toExponential(2)}`);
      expect(worst).toBeLessThanOrEqual(LOGIT_TOLERANCE);
    } finally {
      for (const plan of [...batched, ...alone]) plan.destroy();
      batch.destroy();
      destroyKvArena(arena);
    }
  }, 300_000);
});

const TEXTS = ["Name three colours.", "Write a haiku about a kiln.", "What is 2 + 2?"];

describe.skipIf(!available).each([
  ["this adapter's plan, greedy", () => gpu, { temperature: 0 }],
  // On a GPU a sampled row's best candidates are selected on the GPU and only they are read back (kernels/top-k.ts).
  ["a real GPU's plan, seeded sampling", () => asRealGpu(gpu), { temperature: 0.9, seed: 5 }],
] as const)("concurrent requests to a WebGPU model, %s", (_name, device, sampling) => {
  let model: WebGpuModel;
  beforeAll(async () => {
    // An f32 cache: with f16 (the default) rounding a key differently by one unit can change a sampled draw.
    if (available) model = await loadWebGpuModel({ id: "smol", path: realModelPath(), gpu: device(), ctxSize: 512, parallel: 3, kvCache: "f32", ids: sequentialIds() });
  });
  afterAll(async () => model?.dispose());

  it("decode in shared steps and answer as each request does alone", async () => {
    const requests = TEXTS.map((text) => userRequest("smol", text, { maxTokens: 16, sampling }));
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
