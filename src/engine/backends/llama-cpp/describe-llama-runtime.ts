/**
 * What llama.cpp finds on this machine, for `kiln info`: the GPU backend in use (or none), the devices with their
 * memory, the backends this machine could use, the build and CPU facts.
 */
import { cpus } from "node:os";
import type { Llama } from "node-llama-cpp";
import { usableGpuTypes } from "./load-llama.js";

/** A device llama.cpp computes on, with its memory in bytes (`kiln info --json`). */
export type LlamaDevice =
  | { kind: "cpu"; name: string; cores: number; ramTotalBytes: number; ramFreeBytes: number }
  | { kind: "gpu"; backend: string; names: string[]; vramTotalBytes: number; vramFreeBytes: number; unifiedMemoryBytes: number };

export async function describeLlamaRuntime(llama: Llama): Promise<Record<string, unknown>> {
  const gpuDevices = llama.gpu === false ? [] : await llama.getGpuDeviceNames();
  return {
    gpu: llama.gpu === false ? "none (CPU)" : llama.gpu,
    gpuDevices,
    devices: await listDevices(llama, gpuDevices),
    // What kiln would try here, best first ("cpu" is always there).
    usableBackends: (await usableGpuTypes()).map((type) => type === false ? "cpu" : type),
    release: llama.llamaCppRelease.release,
    build: llama.buildType,
    cpuMathCores: llama.cpuMathCores,
    systemInfo: llama.systemInfo.trim(),
  };
}

/** The CPU with its RAM, then the GPU backend in use with its devices' names and VRAM (node-llama-cpp sums it). */
async function listDevices(llama: Llama, gpuNames: string[]): Promise<LlamaDevice[]> {
  const ram = await llama.getRamState();
  const processors = cpus();
  const devices: LlamaDevice[] = [
    { kind: "cpu", name: processors[0]?.model.trim() || "CPU", cores: processors.length, ramTotalBytes: ram.total, ramFreeBytes: ram.free },
  ];
  if (llama.gpu !== false) {
    const vram = await llama.getVramState();
    devices.push({ kind: "gpu", backend: llama.gpu, names: gpuNames, vramTotalBytes: vram.total, vramFreeBytes: vram.free, unifiedMemoryBytes: vram.unifiedSize });
  }
  return devices;
}
