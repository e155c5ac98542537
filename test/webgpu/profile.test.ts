/**
 * The profiles of `npm run bench:webgpu -- --profile` on a tiny generated model: a decode step's kernel classes, a
 * prompt chunk's and a decode step of several sequences through the batch plan, each with every dispatch of the step
 * or chunk counted once and a GPU time measured.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { openGpuDevice } from "../../src/engine/backends/webgpu/device.js";
import { openGgufTensors } from "../../src/engine/backends/webgpu/gguf/read-tensors.js";
import { readLlamaConfig } from "../../src/engine/backends/webgpu/model/llama-config.js";
import { createTokenBatch, DecodePlan } from "../../src/engine/backends/webgpu/plan/decode.js";
import { profileBatch, profileDecode } from "../../src/engine/backends/webgpu/plan/decode-profile.js";
import { uploadDecodeWeights } from "../../src/engine/backends/webgpu/plan/decode-weights.js";
import { createKvArena, destroyKvArena } from "../../src/engine/backends/webgpu/plan/kv-arena.js";
import { WeightArena } from "../../src/engine/backends/webgpu/plan/weight-arena.js";
import { writeTinyGguf } from "../helpers/tiny-gguf.js";
import { webGpuAvailable } from "../helpers/webgpu.js";

const available = await webGpuAvailable();
const dir = mkdtempSync(join(tmpdir(), "kiln-webgpu-profile-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe.skipIf(!available)("the WebGPU profiles", () => {
  it("time every kernel class of a decode step, a prompt chunk and a step of several sequences", async () => {
    const gpu = await openGpuDevice();
    const file = await openGgufTensors(await writeTinyGguf(join(dir, "tiny.gguf"), 3));
    const config = readLlamaConfig(file.header);
    const weights = new WeightArena(gpu.device);
    const uploaded = await uploadDecodeWeights(file, config, weights);
    const kv = createKvArena(gpu.device, config, 128, 2);
    const batch = createTokenBatch(gpu, config, uploaded, kv, { batch: 16, decodeRows: 2 });
    const plan = new DecodePlan(gpu, config, uploaded, 128, {}, { arena: kv, batch, slot: 0 });
    try {
      await plan.prefill([1, 2, 3, 4]);
      await plan.step(5);
      const decode = await profileDecode(gpu.device, plan, 2);
      expect(decode.kernels.reduce((n, k) => n + k.dispatches, 0)).toBe(plan.dispatchCount);
      expect(decode.kernels.every((k) => k.ms >= 0)).toBe(true);
      expect(decode.kernels.reduce((sum, k) => sum + k.ms, 0)).toBeGreaterThan(0);
      const chunk = Array.from({ length: 12 }, (_, i) => 10 + i);
      const prompt = await profileBatch(gpu.device, batch, chunk, chunk.map((_, i) => [0, plan.position + i] as const), 2);
      const layerKinds = ["embed", "rms-norm", "qkv", "rope-kv", "attention", "o-residual", "gate-up-swiglu", "down-residual"];
      expect(prompt.map((k) => k.kind)).toEqual(layerKinds);
      expect(prompt.find((k) => k.kind === "rms-norm")?.dispatches).toBe(2 * config.layers);
      expect(prompt.reduce((sum, k) => sum + k.ms, 0)).toBeGreaterThan(0);
      // Two sequences' tokens in one step, ending in the output norm, the LM head and an argmax per token.
      const step = await profileBatch(gpu.device, batch, [7, 8], [[0, plan.position], [1, 3]], 2, true);
      expect(step.map((k) => k.kind)).toEqual([...layerKinds, "lm-head", "argmax"]);
      expect(step.find((k) => k.kind === "rms-norm")?.dispatches).toBe(2 * config.layers + 1);
      expect(step.reduce((sum, k) => sum + k.ms, 0)).toBeGreaterThan(0);
      // The step run for real reports the host's part of it.
      await batch.decode([7, 8], [[0, plan.position], [1, 3]]);
      const host = batch.lastHostTimes;
      expect(host.encodeMs).toBeGreaterThan(0);
      expect(host.encodeMs + host.submitMs + host.waitMs).toBeGreaterThan(host.encodeMs);
    } finally {
      plan.destroy();
      batch.destroy();
      destroyKvArena(kv);
      weights.destroy();
      gpu.destroy();
    }
  }, 120_000);
});
