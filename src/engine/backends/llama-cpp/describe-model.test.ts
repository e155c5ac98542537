import { describe, expect, it } from "vitest";
import { describePlacement, type Placement } from "./describe-model.js";

const GiB = 1024 ** 3;
const MiB = 1024 ** 2;
const onGpu: Placement = { gpu: "vulkan", gpuDevices: ["NVIDIA H200"], gpuLayers: 29, layers: 29, ram: 0, vram: 1.2 * GiB, contextSize: 32_768, sequences: 8 };

describe("describePlacement", () => {
  it("says where every layer and the KV cache went, and the context", () => {
    expect(describePlacement(onGpu)).toBe("29/29 layers on vulkan (NVIDIA H200), KV cache 1.2 GiB in VRAM, context 32768 × 8");
    expect(describePlacement({ ...onGpu, gpu: false, gpuDevices: [], gpuLayers: 0, layers: 31, ram: 818 * MiB, vram: 0, contextSize: 8192, sequences: 4 }))
      .toBe("31 layers on the CPU, KV cache 818 MiB in RAM, context 8192 × 4");
  });

  it("names a partial offload and both memories", () => {
    expect(describePlacement({ ...onGpu, gpu: "cuda", gpuDevices: ["NVIDIA A10"], gpuLayers: 20, ram: 0.4 * GiB, vram: 0.8 * GiB }))
      .toBe("20/29 layers on cuda (NVIDIA A10), 9 on the CPU, KV cache 819 MiB in VRAM + 410 MiB in RAM, context 32768 × 8");
  });

  it("puts a GPU build's model with no layers offloaded on the CPU", () => {
    expect(describePlacement({ ...onGpu, gpuLayers: 0, ram: GiB, vram: 0 })).toBe("29 layers on the CPU, KV cache 1.0 GiB in RAM, context 32768 × 8");
  });
});
