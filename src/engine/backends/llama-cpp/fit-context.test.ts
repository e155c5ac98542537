import { describe, expect, it } from "vitest";
import type { GgufFileInfo, Llama } from "node-llama-cpp";
import { checkCellLimit, formatBytes, kvShapeOf, largestFitting } from "./fit-context.js";

/** A fit test that accepts sizes up to `limit` and records what it was asked. */
function fitsUpTo(limit: number): { fits(size: number): Promise<boolean>; asked: number[] } {
  const asked: number[] = [];
  return { asked, fits: async (size) => (asked.push(size), size <= limit) };
}

describe("largestFitting", () => {
  it("takes the cap when it fits, asking once", async () => {
    const probe = fitsUpTo(1_000_000);
    expect(await largestFitting(2048, 32_768, probe.fits)).toBe(32_768);
    expect(probe.asked).toEqual([32_768]);
  });

  it("otherwise the largest multiple of 1,024 that fits", async () => {
    expect(await largestFitting(2048, 32_768, fitsUpTo(20_000).fits)).toBe(19_456);
    expect(await largestFitting(2048, 131_072, fitsUpTo(65_536).fits)).toBe(65_536);
    expect(await largestFitting(2048, 8192, fitsUpTo(8191).fits)).toBe(7168);
  });

  it("never goes below the floor, even when nothing fits", async () => {
    expect(await largestFitting(2048, 32_768, fitsUpTo(100).fits)).toBe(2048);
    expect(await largestFitting(2048, 32_768, fitsUpTo(2048).fits)).toBe(2048);
  });

  it("returns a train context at or below the floor as it is", async () => {
    const probe = fitsUpTo(0);
    expect(await largestFitting(512, 512, probe.fits)).toBe(512);
    expect(probe.asked).toEqual([]);
  });

  it("asks a handful of sizes, not every one", async () => {
    const probe = fitsUpTo(77_777);
    expect(await largestFitting(2048, 1_048_576, probe.fits)).toBe(77_824 - 1024);
    expect(probe.asked.length).toBeLessThanOrEqual(12);
  });
});

describe("formatBytes", () => {
  it("says MiB, GiB or TiB", () => {
    expect(formatBytes(858 * 1024 ** 2)).toBe("858 MiB");
    expect(formatBytes(1.25 * 1024 ** 3)).toBe("1.3 GiB");
    expect(formatBytes(5.6 * 1024 ** 4)).toBe("5.6 TiB");
  });
});

/** Qwen2.5-Coder-1.5B's attention: 28 layers, 12 heads of 128 over 1536, 2 KV heads. */
const qwen = { architectureMetadata: { block_count: 28, embedding_length: 1536, attention: { head_count: 12, head_count_kv: 2 } } } as unknown as GgufFileInfo;
const GiB = 1024 ** 3;
const vulkan = { getVramState: async () => ({ total: 140 * GiB, used: 0, free: 139 * GiB, unifiedSize: 0 }) } as unknown as Llama;
const what = { id: "qwen", path: "/m/qwen.gguf" };

describe("the Vulkan KV limit", () => {
  it("reads a layer's K and V cache per cell from the GGUF metadata", () => {
    expect(kvShapeOf(qwen)).toEqual({ layers: 28, keyBytes: 512, valueBytes: 512 });
    const explicit = { architectureMetadata: { block_count: 2, embedding_length: 64, attention: { head_count: [4, 4], head_count_kv: [1, 2], key_length: 32, value_length: 16 } } } as unknown as GgufFileInfo;
    expect(kvShapeOf(explicit)).toEqual({ layers: 2, keyBytes: 128, valueBytes: 64 });
  });

  it("refuses the contexts that would abort the process, naming the VRAM or the buffer limit", async () => {
    // 8M cells of 512 bytes made a 4 GiB K cache per layer, which aborted llama.cpp on an H200; 7.3M did not.
    const limit = { cells: Math.floor((4 * GiB - 1) / 512), shape: kvShapeOf(qwen) };
    await expect(checkCellLimit(vulkan, limit, { ...what, size: 1_048_576, sequences: 7 })).resolves.toBeUndefined();
    await expect(checkCellLimit(vulkan, limit, { ...what, size: 1_048_576, sequences: 8 })).rejects.toThrow(
      "cannot create a context of 8 × 1048576 tokens for qwen: it needs 224.0 GiB of VRAM for its KV cache alone, 139.0 GiB free (of 140.0 GiB); ask for a smaller context or fewer parallel sequences",
    );
    const wide = { cells: 4000, shape: { layers: 1, keyBytes: 1024 ** 2, valueBytes: 1024 ** 2 } };
    await expect(checkCellLimit(vulkan, wide, { ...what, size: 4096, sequences: 1 })).rejects.toThrow(
      "it would put 4.0 GiB in each layer's KV cache, beyond the 4 GiB a Vulkan buffer holds;",
    );
    await expect(checkCellLimit(vulkan, { cells: Number.POSITIVE_INFINITY }, { ...what, size: 1_048_576, sequences: 256 })).resolves.toBeUndefined();
  });
});
