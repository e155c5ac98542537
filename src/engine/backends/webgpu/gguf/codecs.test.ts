import { describe, expect, it } from "vitest";
import { mulberry32 } from "../../../../../test/helpers/tiny-gguf.js";
import { dequantize, quantize } from "./codecs.js";
import { roundToHalf } from "./half.js";
import { GgmlType, blockInfo, typeName } from "./quant-types.js";

const QUANTIZED = [GgmlType.Q4_0, GgmlType.Q4_1, GgmlType.Q5_0, GgmlType.Q5_1, GgmlType.Q8_0];
const NAMED = QUANTIZED.map((type) => [typeName(type), type] as const);

function randomValues(count: number, seed: number, scale = 1): Float32Array {
  const random = mulberry32(seed);
  return Float32Array.from({ length: count }, () => (random() * 2 - 1) * scale);
}

/** Half an f16 ulp at `x`, subnormals included: the most that storing `x` as f16 moves it. */
const halfError = (x: number) => Math.max(Math.abs(x) * 2 ** -11, 2 ** -25);

/** The largest error one 32-block of `type` may make, from the block's values (ggml's quantizer rules). */
function blockBound(type: GgmlType, block: Float32Array): number {
  const amax = Math.max(...block.map(Math.abs));
  const min = Math.min(...block);
  const spread = Math.max(...block) - min;
  // step: the quantization step d; steps: how much of a step may be lost (a clamped side loses a whole one);
  // top: the largest |q|, which multiplies the f16 rounding error of d.
  const bound = (step: number, steps: number, top: number, m = 0) => step * steps + top * halfError(step) + halfError(m);
  switch (type) {
    case GgmlType.Q4_0: return bound(amax / 8, 1.001, 8);
    case GgmlType.Q5_0: return bound(amax / 16, 1.001, 16);
    case GgmlType.Q4_1: return bound(spread / 15, 0.501, 15, min);
    case GgmlType.Q5_1: return bound(spread / 31, 0.501, 31, min);
    default: return bound(amax / 127, 0.501, 127);
  }
}

describe("quantize / dequantize", () => {
  it("sizes every type by its blocks", () => {
    expect(quantize(GgmlType.Q4_0, new Float32Array(64))).toHaveLength(36);
    expect(quantize(GgmlType.Q8_0, new Float32Array(32))).toHaveLength(34);
    expect(quantize(GgmlType.F16, new Float32Array(3))).toHaveLength(6);
    expect(() => quantize(GgmlType.Q4_1, new Float32Array(33))).toThrow(/whole Q4_1 blocks/);
    expect(() => dequantize(GgmlType.Q8_0, new Uint8Array(33), 32)).toThrow(/need 34 bytes/);
    expect(quantize(GgmlType.Q6_K, new Float32Array(512))).toHaveLength(420);
    expect(() => quantize(GgmlType.Q4_K, new Float32Array(128))).toThrow(/whole Q4_K blocks/);
  });

  it("keeps F32 exactly and F16 within half an f16 ulp", () => {
    const values = randomValues(256, 1, 3);
    expect(dequantize(GgmlType.F32, quantize(GgmlType.F32, values), 256)).toEqual(values);
    const halves = dequantize(GgmlType.F16, quantize(GgmlType.F16, values), 256);
    expect(Array.from(halves)).toEqual(Array.from(values, roundToHalf));
    values.forEach((v, i) => expect(Math.abs(halves[i]! - v)).toBeLessThanOrEqual(Math.abs(v) * 2 ** -11 + 2 ** -25));
  });

  it.each(NAMED)("round-trips %s within its per-block error bound", (_, type) => {
    for (const scale of [1e-3, 0.5, 40]) {
      const values = randomValues(32 * 64, type * 7 + 1, scale);
      const back = dequantize(type, quantize(type, values), values.length);
      for (let b = 0; b < values.length / 32; b++) {
        const block = values.subarray(b * 32, b * 32 + 32);
        const bound = blockBound(type, block);
        const worst = block.reduce((max, v, j) => Math.max(max, Math.abs(back[b * 32 + j]! - v)), 0);
        expect(worst).toBeLessThanOrEqual(bound);
      }
    }
  });

  it.each(NAMED)("meets ggml's own total-error threshold for %s (test-quantize-fns data)", (_, type) => {
    const n = 32 * 128;
    const data = Float32Array.from({ length: n }, (_, i) => 0.1 + 2 * Math.fround(Math.cos(i)));
    const back = dequantize(type, quantize(type, data), n);
    const rmse = Math.sqrt(data.reduce((sum, v, i) => sum + (v - back[i]!) ** 2, 0)) / n;
    expect(rmse).toBeLessThan(0.002);
  });

  it("writes ggml's Q4_0 bytes for a block whose answer is known by hand", () => {
    // max magnitude −4 → d = −4/−8 = 0.5; the ramp maps to q = 0..15 and the zeros to 8.
    const values = Float32Array.from({ length: 32 }, (_, j) => (j < 16 ? (j - 8) * 0.5 : 0));
    const bytes = quantize(GgmlType.Q4_0, values);
    expect(Array.from(bytes.subarray(0, 2))).toEqual([0x00, 0x38]); // f16 0.5
    expect(Array.from(bytes.subarray(2))).toEqual(Array.from({ length: 16 }, (_, j) => j | (8 << 4)));
    expect(dequantize(GgmlType.Q4_0, bytes, 32)).toEqual(values);
  });

  it("rounds Q8_0 halves away from zero like C's roundf, and stores the 5th bit of Q5 quants in qh", () => {
    // amax 127 → d = 1, id = 1: ±2.5 must give ±3 (Math.round would give 3 and −2).
    const values = new Float32Array(32);
    values.set([127, 2.5, -2.5, -0.5]);
    const q8 = quantize(GgmlType.Q8_0, values);
    expect(Array.from(new Int8Array(q8.buffer, 2, 4))).toEqual([127, 3, -3, -1]);
    const ramp = Float32Array.from({ length: 32 }, (_, j) => j);
    const q5 = quantize(GgmlType.Q5_1, ramp); // min 0, d = 1: q = j, so qh has bits 16..31 set
    expect(new DataView(q5.buffer).getUint32(4, true)).toBe(0xffff0000);
    expect(dequantize(GgmlType.Q5_1, q5, 32)).toEqual(ramp);
  });

  it("reads blocks from any byte offset, and handles all-zero blocks", () => {
    const values = randomValues(64, 9);
    const bytes = quantize(GgmlType.Q5_0, values);
    const shifted = new Uint8Array(bytes.length + 3);
    shifted.set(bytes, 3);
    expect(dequantize(GgmlType.Q5_0, shifted.subarray(3), 64)).toEqual(dequantize(GgmlType.Q5_0, bytes, 64));
    for (const type of QUANTIZED) {
      // d = 0/−8 is −0 in ggml too, so zeros may come back signed: compare with ===, which ignores the sign.
      expect(dequantize(type, quantize(type, new Float32Array(32)), 32).every((v) => v === 0)).toBe(true);
      expect(blockInfo(type).weights).toBe(32);
    }
  });
});
