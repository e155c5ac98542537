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
