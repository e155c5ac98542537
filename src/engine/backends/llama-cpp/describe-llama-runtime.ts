/** What llama.cpp finds on this machine, for `kiln info`: the GPU it would use (or none), the build and CPU facts. */
import type { Llama } from "node-llama-cpp";

export async function describeLlamaRuntime(llama: Llama): Promise<Record<string, unknown>> {
  return {
    gpu: llama.gpu === false ? "none (CPU)" : llama.gpu,
    gpuDevices: llama.gpu === false ? [] : await llama.getGpuDeviceNames(),
    release: llama.llamaCppRelease.release,
    build: llama.buildType,
    cpuMathCores: llama.cpuMathCores,
    systemInfo: llama.systemInfo.trim(),
  };
}
