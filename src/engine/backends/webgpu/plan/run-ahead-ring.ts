/** Buffers of run-ahead decoding (DecodePlan.runAhead): several steps per submit, ids read back once. */
import { createStorage } from "../kernels/run-kernel.js";

/** Most steps one runAhead call takes. */
export const RUN_AHEAD_MAX = 16;

/** Buffers of run-ahead: per-step uniforms, the sampled ids, and their mappable copy. */
export interface RunAheadRing {
  steps: GPUBuffer;
  ids: GPUBuffer;
  staging: GPUBuffer;
}

/** Allocates the ring once, on the first run-ahead. */
export function createRunAheadRing(device: GPUDevice): RunAheadRing {
  return {
    steps: createStorage(device, RUN_AHEAD_MAX * 16, "run-ahead-steps"),
    ids: createStorage(device, RUN_AHEAD_MAX * 4, "run-ahead-ids"),
    staging: device.createBuffer({ size: RUN_AHEAD_MAX * 4, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST, label: "run-ahead-staging" }),
  };
}
