/** What llama.cpp finds on this machine, for `kiln info`: the GPU it would use (or none), the build and CPU facts. */
import { openLlama } from "./load-llama.js";

export async function describeLlamaCpp(): Promise<Record<string, unknown>> {
  const llama = await openLlama("auto");
  try {
    return {
      gpu: llama.gpu === false ? "none (CPU)" : llama.gpu,
      gpuDevices: llama.gpu === false ? [] : await llama.getGpuDeviceNames(),
      release: llama.llamaCppRelease.release,
      build: llama.buildType,
      cpuMathCores: llama.cpuMathCores,
      systemInfo: llama.systemInfo.trim(),
    };
  } finally {
    await llama.dispose();
  }
}
