/**
 * Whether this machine has a WebGPU adapter (a GPU, or Mesa's software renderer). Tests of the WebGPU backend skip
 * without one, unless KILN_REQUIRE_WEBGPU=1 (CI sets it after installing Mesa): then a missing adapter fails them.
 */
import { getLlama, type LlamaModel } from "node-llama-cpp";
import { openGpuDevice, tryOpenGpuDevice, type GpuDevice } from "../../src/engine/backends/webgpu/device.js";
import { openGgufTensors } from "../../src/engine/backends/webgpu/gguf/read-tensors.js";
import { readLlamaConfig, type LlamaConfig } from "../../src/engine/backends/webgpu/model/llama-config.js";
import { uploadDecodeWeights, type DecodeWeights } from "../../src/engine/backends/webgpu/plan/decode-weights.js";
import { WeightArena } from "../../src/engine/backends/webgpu/plan/weight-arena.js";
import type { DecodePlan } from "../../src/engine/backends/webgpu/plan/decode.js";
import { realModelPath } from "./real-model.js";

export async function webGpuAvailable(): Promise<boolean> {
  if (process.env.KILN_REQUIRE_WEBGPU === "1") return true;
  const device = await tryOpenGpuDevice();
  device?.destroy();
  return device !== undefined;
}

/**
 * `gpu` as DecodePlan sees a real GPU (info.software false, the live device underneath): on Mesa's llvmpipe it runs
 * the kernels and plan choices a GPU gets (split-K prefill GEMMs, workgroup-per-(head, token) prefill attention,
 * 4-row GEMVs, the decode attention kernel), exactly if slowly.
 */
export function asRealGpu(gpu: GpuDevice): GpuDevice {
  return Object.create(gpu, { info: { value: { ...gpu.info, software: false } } }) as GpuDevice;
}

/**
 * The default model's weights uploaded to this machine's adapter, with node-llama-cpp's vocabulary of the same file
 * (to tokenize prompts as the engine does); `dispose` releases all of it.
 */
export async function openDefaultModelOnGpu(open: () => Promise<GpuDevice> = () => openGpuDevice()): Promise<{
  gpu: GpuDevice;
  vocab: LlamaModel;
  config: LlamaConfig;
  weights: DecodeWeights;
  dispose(): Promise<void>;
}> {
  const path = realModelPath();
  const llama = await getLlama({ build: "never", gpu: false });
  const vocab = await llama.loadModel({ modelPath: path, vocabOnly: true });
  const gpu = await open();
  const file = await openGgufTensors(path);
  const config = readLlamaConfig(file.header);
  const arena = new WeightArena(gpu.device);
  const weights = await uploadDecodeWeights(file, config, arena);
  return {
    gpu, vocab, config, weights,
    async dispose() {
      arena.destroy();
      gpu.destroy();
      await vocab.dispose();
      await llama.dispose();
    },
  };
}

/**
 * A prompt evaluated in batches, then greedy decoding on the GPU: the first step's logits and `generated` tokens, as
 * two plans of one model are compared (the same continuation, logits equal up to f32 summation order).
 */
export async function greedyContinuation(plan: DecodePlan, prompt: readonly number[], generated: number): Promise<{ logits: Float32Array; tokens: number[] }> {
  await plan.prefill(prompt.slice(0, -1));
  const first = await plan.step(prompt.at(-1)!, { logits: true });
  const tokens = [first.token];
  while (tokens.length < generated) tokens.push((await plan.step()).token);
  return { logits: first.logits!, tokens };
}

/** The largest |Δ logit| between two rows, relative to the largest |logit| of `expected`. */
export function relativeLogitGap(expected: Float32Array, actual: Float32Array): number {
  let scale = 0;
  let worst = 0;
  expected.forEach((v, k) => ((scale = Math.max(scale, Math.abs(v))), (worst = Math.max(worst, Math.abs(actual[k]! - v)))));
  return worst / scale;
}
