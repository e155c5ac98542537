/** Test-only kit for the kernel tests: one pinned device per test file, seeded data, planar weights. */
import { tryOpenGpuDevice } from "../device.js";
import { dequantize, quantize } from "../gguf/codecs.js";
import { repackPlanar, type PlanarTensor } from "../gguf/planar.js";
import type { GgmlType } from "../gguf/quant-types.js";
import { weightPlanes } from "./quant-wgsl.js";
import { bindBuffers, createStorage, type BufferRange } from "./run-kernel.js";
import { seededRandom } from "../../../../lib/seeded-random.js";

/** The test device, or undefined (tests skip) when no adapter comes up. Held for the whole file (GC pinning). */
export const gpu = await tryOpenGpuDevice();
export const noGpu = gpu === undefined;
if (noGpu) console.warn("WebGPU kernel tests skipped: no WebGPU adapter came up (Dawn found no Vulkan or GL device)");

/** The device of the kit; only call inside tests that skip when `noGpu`. */
export function device(): GPUDevice {
  if (!gpu) throw new Error("no WebGPU device");
  return gpu.device;
}

/** A seeded generator of floats in [-1, 1). */
export function seeded(seed: number): () => number {
  const random = seededRandom(seed);
  return () => random() * 2 - 1;
}

/** `count` seeded floats in [-scale, scale). */
export function randomFloats(count: number, seed: number, scale = 1): Float32Array {
  const next = seeded(seed);
  return Float32Array.from({ length: count }, () => next() * scale);
}

/** A random rows × cols matrix quantized as `type`: its planar form and the f32 values ggml would decode. */
export function randomPlanar(type: GgmlType, rows: number, cols: number, seed: number): { tensor: PlanarTensor; values: Float32Array } {
  const bytes = quantize(type, randomFloats(rows * cols, seed));
  return { tensor: repackPlanar(type, bytes, rows, cols), values: dequantize(type, bytes, rows * cols) };
}

/** Uploads a planar tensor's planes, in the order the kernels bind them (to the kit's device unless `on`). */
export function uploadPlanes(tensor: PlanarTensor, on = device()): GPUBuffer[] {
  return weightPlanes(tensor.type).map((plane) => createStorage(on, tensor[plane], plane));
}

/** Max |a - b| over two arrays. */
export function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let worst = 0;
  for (let i = 0; i < a.length; i++) worst = Math.max(worst, Math.abs(a[i]! - b[i]!));
  return worst;
}

/** Runs one pipeline over `buffers` (bound 0, 1, …) on an x × y grid of workgroups (of the kit's device unless `on`). */
export function dispatchGrid(pipeline: GPUComputePipeline, buffers: BufferRange[], [x, y]: readonly [number, number], on = device()): void {
  const encoder = on.createCommandEncoder();
  const pass = encoder.beginComputePass();
  pass.setPipeline(pipeline);
  pass.setBindGroup(0, bindBuffers(on, pipeline, buffers));
  pass.dispatchWorkgroups(x, y);
  pass.end();
  on.queue.submit([encoder.finish()]);
}
