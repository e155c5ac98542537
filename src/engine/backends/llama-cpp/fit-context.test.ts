import { describe, expect, it } from "vitest";
import { formatBytes, largestFitting } from "./fit-context.js";

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
