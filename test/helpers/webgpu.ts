/**
 * Whether this machine has a WebGPU adapter (a GPU, or Mesa's software renderer). Tests of the WebGPU backend skip
 * without one, unless KILN_REQUIRE_WEBGPU=1 (CI sets it after installing Mesa): then a missing adapter fails them.
 */
import { tryOpenGpuDevice, type GpuDevice } from "../../src/engine/backends/webgpu/device.js";

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
