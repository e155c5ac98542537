import { describe, expect, it } from "vitest";
import { fromHalfBits, roundToHalf, toHalfBits } from "./half.js";

describe("f16 conversions", () => {
  it("encodes known values, infinities and subnormals", () => {
    expect(toHalfBits(1)).toBe(0x3c00);
    expect(toHalfBits(-2)).toBe(0xc000);
    expect(toHalfBits(0.5)).toBe(0x3800);
    expect(toHalfBits(65504)).toBe(0x7bff);
    expect(toHalfBits(65520)).toBe(0x7c00); // rounds up past the largest half
    expect(toHalfBits(2 ** -24)).toBe(0x0001);
    expect(toHalfBits(2 ** -26)).toBe(0x0000);
    expect(toHalfBits(-0)).toBe(0x8000);
    expect(fromHalfBits(0x7c00)).toBe(Infinity);
    expect(Number.isNaN(fromHalfBits(toHalfBits(NaN)))).toBe(true);
  });

  it("rounds ties to even", () => {
    // 1 + 2^-11 lies halfway between 1 and 1 + 2^-10: even mantissa (1) wins; 1 + 3·2^-11 goes up to 1 + 2^-9.
    expect(roundToHalf(1 + 2 ** -11)).toBe(1);
    expect(roundToHalf(1 + 3 * 2 ** -11)).toBe(1 + 2 ** -9);
    expect(roundToHalf(3 * 2 ** -25)).toBe(2 ** -23); // subnormal tie, odd neighbour rounds up to even
  });

  it("round-trips every finite half exactly", () => {
    const mismatches: number[] = [];
    for (let bits = 0; bits < 0x10000; bits++) {
      if ((bits & 0x7c00) !== 0x7c00 && toHalfBits(fromHalfBits(bits)) !== bits) mismatches.push(bits);
    }
    expect(mismatches).toEqual([]);
  });
});
