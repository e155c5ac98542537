/**
 * Whether this machine has a WebGPU adapter (a GPU, or Mesa's software renderer). Tests of the WebGPU backend skip
 * without one, unless KILN_REQUIRE_WEBGPU=1 (CI sets it after installing Mesa): then a missing adapter fails them.
 */
import { tryOpenGpuDevice } from "../../src/engine/backends/webgpu/device.js";

export async function webGpuAvailable(): Promise<boolean> {
  if (process.env.KILN_REQUIRE_WEBGPU === "1") return true;
  const device = await tryOpenGpuDevice();
  device?.destroy();
  return device !== undefined;
}
