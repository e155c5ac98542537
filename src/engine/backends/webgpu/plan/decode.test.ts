import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { writeTinyGguf, type TinyGgufOptions } from "../../../../../test/helpers/tiny-gguf.js";
import { asRealGpu } from "../../../../../test/helpers/webgpu.js";
import { argmax, createReferenceSession, loadReferenceModel, type ReferenceStep } from "../../../../../test/helpers/webgpu-reference.js";
import { openGgufTensors } from "../gguf/read-tensors.js";
import { openGpuDevice, type GpuDevice } from "../device.js";
import { gpu, noGpu } from "../kernels/gpu-test-kit.fixture.js";
import { readLlamaConfig } from "../model/llama-config.js";
import type { DecodePlanOptions } from "./decode-dispatches.js";
import { DecodePlan, type DecodeStepResult } from "./decode.js";
import { uploadDecodeWeights, type UploadOptions } from "./decode-weights.js";
import { WeightArena } from "./weight-arena.js";

const dir = mkdtempSync(join(tmpdir(), "kiln-webgpu-decode-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const MAX_CTX = 16;

/** Writes a tiny fixture and loads it both on the GPU and into the f64 reference. */
async function load(name: string, options: TinyGgufOptions, upload: UploadOptions = {}, planOptions: DecodePlanOptions = {}, on: GpuDevice = gpu!) {
  const path = await writeTinyGguf(join(dir, `${name}.gguf`), 3, { outputScale: 1, ...options });
  const file = await openGgufTensors(path);
  const config = readLlamaConfig(file.header);
  const arena = new WeightArena(on.device);
  const plan = new DecodePlan(on, config, await uploadDecodeWeights(file, config, arena, upload), MAX_CTX, planOptions);
  return { plan, arena, reference: await loadReferenceModel(path) };
}

/** Design §4.2 bounds: per-layer relative L2 ≤ 1e-5, logits max |Δ| ≤ 1e-4·max|logit|, same argmax unless a near-tie. */
function expectMatches(actual: DecodeStepResult, expected: ReferenceStep, bounds = { layer: 1e-5, logits: 1e-4 }): void {
  actual.residuals?.forEach((layer, l) => {
    const ref = expected.residuals[l]!;
    let diff = 0;
    let norm = 0;
    ref.forEach((v, k) => ((diff += (layer[k]! - v) ** 2), (norm += v * v)));
    expect(Math.sqrt(diff / norm), `layer ${l}`).toBeLessThanOrEqual(bounds.layer);
  });
  const logits = actual.logits!;
  const maxLogit = Math.max(...expected.logits.map(Math.abs));
  let worst = 0;
  expected.logits.forEach((v, k) => (worst = Math.max(worst, Math.abs(logits[k]! - v))));
  expect(worst).toBeLessThanOrEqual(bounds.logits * maxLogit);
  const sorted = [...expected.logits].sort((a, b) => b - a);
  if (sorted[0]! - sorted[1]! > 2 * bounds.logits * maxLogit) expect(actual.token).toBe(argmax(expected.logits));
}

/** What DecodePlan picks on a real GPU (Mesa here runs the same kernels). */
const GPU_CHOICES: DecodePlanOptions = { gemvRows: 4, threads: 1, attentionPrologue: false, gemvLanes: 64 };

describe.skipIf(noGpu)("decode plan (one token per submit) vs the f64 reference", () => {
  for (const [name, options] of [["f32", { type: "f32" }], ["q8_0-tied", { type: "q8_0", tied: true }], ["q4_1", { type: "q4_1" }], ["q5_0", { type: "q5_0" }]] as const) {
    it(`matches per-layer residuals, logits and argmax on the ${name} fixture`, async () => {
      const { plan, arena, reference } = await load(name, options);
      const session = createReferenceSession(reference);
      for (const token of [1, 70, 140, 7, 33, 99]) expectMatches(await plan.step(token, { residuals: true, logits: true }), session.step(token));
      // embed (+ first norm); per layer QKV+RoPE (normed), attention+O (+ next norm), gate/up (normed), down (+ next norm); LM head, 2 argmax
      expect(plan.lastStepDispatches).toBe(1 + 4 * reference.config.layers + 3);
      expect(plan.dispatchCount).toBe(plan.lastStepDispatches); // what the model's info reports per token
      plan.destroy();
      arena.destroy();
    });
  }

  const K_SHAPE = { embedding: 256, feedForward: 512 }; // K-quant rows are whole 256-blocks
  for (const [name, options] of [["q4_k", { type: "q4_k", shape: K_SHAPE }], ["q5_k", { type: "q5_k", shape: K_SHAPE }], ["q6_k-tied", { type: "q6_k", tied: true, shape: K_SHAPE }]] as const) {
    it(`matches per-layer residuals, logits and argmax on the ${name} fixture`, async () => {
      const { plan, arena, reference } = await load(name, options);
      const session = createReferenceSession(reference);
      for (const token of [1, 70, 140, 7, 33]) expectMatches(await plan.step(token, { residuals: true, logits: true }), session.step(token));
      plan.destroy();
      arena.destroy();
    });
  }

  it("matches on a Q4_K_M-style mix: Q5_0 layers, Q8_0 attn_v, Q6_K ffn_down, Q8_0 LM head (q/k/v of two types in one GEMV)", async () => {
    const overrides = { attn_v: "q8_0", ffn_down: "q6_k", output: "q8_0" } as const;
    const { plan, arena, reference } = await load("q4_k_m-mix", { type: "q5_0", overrides, shape: { feedForward: 256 } });
    const session = createReferenceSession(reference);
    for (const token of [3, 77, 150, 12]) expectMatches(await plan.step(token, { residuals: true, logits: true }), session.step(token));
    plan.destroy();
    arena.destroy();
  });

  it("matches on a qwen2 fixture: q/k/v biases, NEOX RoPE, θ = 1e6, ε = 1e-6 (stacked q|k|v, rows interleaved for RoPE in the GEMV)", async () => {
    const { plan, arena, reference } = await load("qwen2", { type: "q8_0", qwen2: true, randomNorms: true });
    const session = createReferenceSession(reference);
    for (const token of [5, 60, 120, 9, 200]) expectMatches(await plan.step(token, { residuals: true, logits: true }), session.step(token));
    // embed; per layer QKV+bias+RoPE (NEOX rows interleaved at upload), attention+O, gate/up, down; LM head, 2 argmax
    expect(plan.lastStepDispatches).toBe(1 + 4 * reference.config.layers + 3);
    plan.destroy();
    arena.destroy();
  });

  it("matches on a qwen2 Q4_K_M-style mix with the LM head in row shards (q/k/v of two types in one GEMV, with the bias)", async () => {
    const overrides = { attn_v: "q8_0", ffn_down: "q6_k", output: "q8_0" } as const;
    // 263 vocabulary rows of 64 Q8_0 weights take 64 B each in the quants plane: 8 KiB shards hold 128 rows.
    const { plan, arena, reference } = await load("qwen2-mix", { type: "q5_0", overrides, qwen2: true, shape: { feedForward: 256 } }, { shardBytes: 8192 });
    const session = createReferenceSession(reference);
    for (const token of [7, 99, 250, 31]) expectMatches(await plan.step(token, { residuals: true, logits: true }), session.step(token));
    // embed; per layer QKV of two types in one GEMV with bias and RoPE, attention+O, gate/up, down; 3 LM-head shards, 2 argmax
    expect(plan.lastStepDispatches).toBe(1 + 4 * reference.config.layers + 5);
    plan.destroy();
    arena.destroy();
  });

  it("matches with a real GPU's choices on a qwen2 Q4_K_M-style mix (q/k/v of two types with bias and RoPE, sharded LM head)", async () => {
    const overrides = { attn_v: "q8_0", ffn_down: "q6_k", output: "q8_0" } as const;
    const { plan, arena, reference } = await load("qwen2-mix-gpu", { type: "q5_0", overrides, qwen2: true, shape: { feedForward: 256 } }, { shardBytes: 8192 }, GPU_CHOICES);
    const session = createReferenceSession(reference);
    for (const token of [7, 99, 250, 31]) expectMatches(await plan.step(token, { residuals: true, logits: true }), session.step(token));
    plan.destroy();
    arena.destroy();
  });

  const PROMPT = [1, 70, 140, 7, 33, 99, 12, 250, 3, 61, 18, 200];
  // The last two run the plan a real GPU gets (split-K GEMMs, attention per head and token): batches of 8 + 3 and 11
  // tokens, tiles of 4 rows × 8 tokens.
  for (const [name, options, planOptions, realGpu] of [
    ["q4_1", { type: "q4_1" }, { prefillBatch: 5 }, false],
    ["qwen2-mix", { type: "q5_0", overrides: { attn_v: "q8_0", ffn_down: "q6_k" }, qwen2: true, shape: { feedForward: 256 } }, { prefillBatch: 8 }, false],
    ["q4_k-kv16", { type: "q4_k", shape: K_SHAPE }, { prefillBatch: 16, kvCache: "f16" }, false],
    ["qwen2-mix-split-k", { type: "q5_0", overrides: { attn_v: "q8_0", ffn_down: "q6_k" }, qwen2: true, shape: { feedForward: 256 } }, { prefillBatch: 8 }, true],
    ["q6_k-split-k", { type: "q6_k", shape: K_SHAPE }, { prefillBatch: 16 }, true],
  ] as const) {
    it(`evaluates a prompt in batches (${planOptions.prefillBatch} tokens) as the reference does token by token: ${name}`, async () => {
      const { plan, arena, reference } = await load(`prefill-${name}`, options, {}, planOptions, realGpu ? asRealGpu(gpu!) : gpu!);
      const session = createReferenceSession(reference);
      const expected = PROMPT.map((token) => session.step(token));
      await plan.prefill(PROMPT.slice(0, -1));
      expect(plan.position).toBe(PROMPT.length - 1);
      const bounds = planOptions.kvCache === "f16" ? { layer: 2e-3, logits: 2e-3 } : undefined;
      // The last prompt token reads every cached position the batches wrote; then decoding goes on from there.
      expectMatches(await plan.step(PROMPT.at(-1)!, { residuals: true, logits: true }), expected.at(-1)!, bounds);
      for (const token of [5, 77]) expectMatches(await plan.step(token, { residuals: true, logits: true }), session.step(token), bounds);
      plan.destroy();
      arena.destroy();
    });
  }

  it("matches with q, k, v as three matrices read by one GEMV (as for mixed-type files)", async () => {
    const { plan, arena, reference } = await load("q4_0-split", { type: "q4_0" }, { stackQkv: false });
    const session = createReferenceSession(reference);
    for (const token of [9, 80, 3, 41]) expectMatches(await plan.step(token, { residuals: true, logits: true }), session.step(token));
    expect(plan.lastStepDispatches).toBe(1 + 4 * reference.config.layers + 3);
    plan.destroy();
    arena.destroy();
  });

  it("matches with a real GPU's choices: 4 rows per row group, K split over lanes, a workgroup per head for attention", async () => {
    const { plan, arena, reference } = await load("q5_1-gpu-choices", { type: "q5_1" }, {}, GPU_CHOICES);
    const session = createReferenceSession(reference);
    for (const token of [2, 64, 128, 17]) expectMatches(await plan.step(token, { residuals: true, logits: true }), session.step(token));
    expect(plan.lastStepDispatches).toBe(1 + 5 * reference.config.layers + 3);
    plan.destroy();
    arena.destroy();
  });

  it("stays within f16 rounding of the reference with an f16 KV cache (norms as their own dispatches)", async () => {
    const { plan, arena, reference } = await load("q8_0-kv16", { type: "q8_0" }, {}, { kvCache: "f16", fuseNorm: false });
    const session = createReferenceSession(reference);
    // Keys and values are rounded to half (relative 2^-11): bounds of a few f16 ulps, not f32 ones.
    for (const token of [4, 90, 180, 23, 61]) expectMatches(await plan.step(token, { residuals: true, logits: true }), session.step(token), { layer: 2e-3, logits: 2e-3 });
    // embed; per layer norm, QKV+RoPE, attention+O, norm, gate/up, down; norm, LM head, 2 argmax
    expect(plan.lastStepDispatches).toBe(1 + 6 * reference.config.layers + 4);
    plan.destroy();
    arena.destroy();
  });

  it("feeds the GPU-sampled token into the next step without a CPU round trip", async () => {
    const { plan, arena, reference } = await load("q8_0-feedback", { type: "q8_0" });
    const session = createReferenceSession(reference);
    let result = await plan.step(5, { logits: true });
    expectMatches(result, session.step(5));
    for (let i = 0; i < 8; i++) {
      const sampled = result.token;
      result = await plan.step(undefined, { logits: true });
      expectMatches(result, session.step(sampled)); // the reference is fed what the GPU sampled
    }
    expect(plan.position).toBe(9);
    plan.destroy();
    arena.destroy();
  });

  it("run-ahead gives the same tokens as step-by-step decoding, in one submit", async () => {
    const { plan, arena } = await load("q4_1-run-ahead", { type: "q4_1" });
    const stepwise = [(await plan.step(11)).token];
    for (let i = 0; i < 9; i++) stepwise.push((await plan.step()).token);
    plan.reset();
    const ahead = [...(await plan.runAhead(4, 11)), ...(await plan.runAhead(6))];
    expect(ahead).toEqual(stepwise);
    expect(plan.position).toBe(10);
    await expect(plan.runAhead(MAX_CTX)).rejects.toMatchObject({ code: "context_overflow" });
    plan.destroy();
    arena.destroy();
  });

  it("refuses a step past the KV cache with a context_overflow error", async () => {
    const { plan, arena } = await load("f32-overflow", { type: "f32" });
    plan.position = MAX_CTX;
    await expect(plan.step(1)).rejects.toMatchObject({ code: "context_overflow" });
    plan.destroy();
    arena.destroy();
  });

  it("reports a step on a lost device as an EngineError backend_failure", async () => {
    const own = await openGpuDevice();
    const { plan } = await load("f32-lost", { type: "f32" }, {}, {}, own);
    await plan.step(1);
    own.destroy();
    await expect(plan.step(2)).rejects.toMatchObject({ name: "EngineError", code: "backend_failure" });
  });
});
