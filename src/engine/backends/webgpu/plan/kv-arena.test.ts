import { describe, expect, it } from "vitest";
import type { LlamaConfig } from "../model/llama-config.js";
import { device, noGpu } from "../kernels/gpu-test-kit.fixture.js";
import { createKvArena, destroyKvArena, kvArenaBytes, slotCaches } from "./kv-arena.js";

/** Only the fields the arena reads: 2 layers of 2 kv heads of 64 dims. */
const config = { layers: 2, kvHeads: 2, headDim: 64, ropeTheta: 10000, ropeDim: 64, ropeScale: 1 } as LlamaConfig;

describe.skipIf(noGpu)("the KV arena", () => {
  it("gives each slot its own range of every layer's cache, starting where a binding may start", () => {
    const arena = createKvArena(device(), config, 100, 3, "f16");
    try {
      // 100 positions are laid out as 128, so every slot starts on a binding-offset boundary.
      expect(arena.positions).toBe(128);
      const slotBytes = 2 * 128 * 64 * 2;
      const ranges = [0, 1, 2].map((slot) => slotCaches(arena, config, slot).keys[1] as { offset: number; size: number });
      expect(ranges.map((r) => r.offset)).toEqual([0, slotBytes, 2 * slotBytes]);
      expect(ranges.every((r) => r.size === slotBytes && r.offset % device().limits.minStorageBufferOffsetAlignment === 0)).toBe(true);
      expect(() => slotCaches(arena, config, 3)).toThrow(RangeError);
      expect(kvArenaBytes(arena)).toBeGreaterThanOrEqual(2 * 2 * 3 * slotBytes);
    } finally {
      destroyKvArena(arena);
    }
  });

  it("refuses, naming the sizes, a cache larger than the GPU binds at once", () => {
    const most = Math.min(device().limits.maxStorageBufferBindingSize, device().limits.maxBufferSize);
    const slots = Math.ceil(most / (2 * 4096 * 64 * 4)) + 1;
    expect(() => createKvArena(device(), config, 4096, slots, "f32")).toThrow(
      expect.objectContaining({ code: "backend_failure", message: expect.stringMatching(new RegExp(`KV cache of ${slots} × 4096 tokens.*fewer parallel sequences`)) }),
    );
  });
});
