import { describe, expect, it } from "vitest";
import { dequantize, quantize } from "./codecs.js";
import { GgmlType } from "./quant-types.js";

/** A Q4_K block built field by field from the format's description (the inverse of what the decoder reads). */
function q4kBlock(d: number, dmin: number, scales: number[], mins: number[], quant: (w: number) => number): Uint8Array {
  const bytes = new Uint8Array(144);
  const view = new DataView(bytes.buffer);
  view.setUint16(0, d, true);
  view.setUint16(2, dmin, true);
  for (let j = 0; j < 4; j++) {
    bytes[4 + j] = (scales[j]! & 63) | ((scales[j + 4]! >> 4) << 6);
    bytes[8 + j] = (mins[j]! & 63) | ((mins[j + 4]! >> 4) << 6);
    bytes[12 + j] = (scales[j + 4]! & 15) | ((mins[j + 4]! & 15) << 4);
  }
  for (let w = 0; w < 256; w++) {
    const chunk = w >> 6;
    const l = w & 31;
    bytes[16 + 32 * chunk + l]! |= (w & 32 ? quant(w) << 4 : quant(w));
  }
  return bytes;
}

/** A Q5_K block: the Q4_K fields, with each weight's 5th bit in qh (bit c of byte l = weight 32c + l). */
function q5kBlock(d: number, dmin: number, scales: number[], mins: number[], quant: (w: number) => number): Uint8Array {
  const q4 = q4kBlock(d, dmin, scales, mins, (w) => quant(w) & 15);
  const bytes = new Uint8Array(176);
  bytes.set(q4.subarray(0, 16), 0);
  bytes.set(q4.subarray(16), 48);
  for (let w = 0; w < 256; w++) bytes[16 + (w & 31)]! |= (quant(w) >> 4) << (w >> 5);
  return bytes;
}

/** A Q6_K block built field by field: 6-bit quants split into ql nibbles and qh bit pairs. */
function q6kBlock(d: number, scales: number[], quant: (w: number) => number): Uint8Array {
  const bytes = new Uint8Array(210);
  for (let w = 0; w < 256; w++) {
    const half = w >> 7;
    const k = (w & 127) >> 5;
    const l = w & 31;
    const q = quant(w);
    bytes[64 * half + l + 32 * (k & 1)]! |= k < 2 ? q & 15 : (q & 15) << 4;
    bytes[128 + 32 * half + l]! |= (q >> 4) << (2 * k);
  }
  scales.forEach((s, i) => new DataView(bytes.buffer).setInt8(192 + i, s));
  new DataView(bytes.buffer).setUint16(208, d, true);
  return bytes;
}

describe("K-quant dequantization", () => {
  it("decodes Q4_K: d·scale·q − dmin·min per 32-weight sub-block, with the split 6-bit scales of 4–7", () => {
    const scales = [1, 2, 3, 4, 33, 34, 50, 63];
    const mins = [0, 1, 2, 3, 40, 17, 42, 63];
    const quant = (w: number) => (w * 5) % 16;
    const values = dequantize(GgmlType.Q4_K, q4kBlock(0x3c00, 0x3800, scales, mins, quant), 256); // d = 1, dmin = 0.5
    const expected = Array.from({ length: 256 }, (_, w) => scales[w >> 5]! * quant(w) - 0.5 * mins[w >> 5]!);
    expect(Array.from(values)).toEqual(expected);
  });

  it("decodes Q5_K: d·scale·q − dmin·min with 5-bit q, its 5th bit from qh", () => {
    const scales = [1, 2, 3, 4, 33, 34, 50, 63];
    const mins = [0, 1, 2, 3, 40, 17, 42, 63];
    const quant = (w: number) => (w * 7) % 32;
    const values = dequantize(GgmlType.Q5_K, q5kBlock(0x3c00, 0x3800, scales, mins, quant), 256);
    expect(Array.from(values)).toEqual(Array.from({ length: 256 }, (_, w) => scales[w >> 5]! * quant(w) - 0.5 * mins[w >> 5]!));
  });

  it("decodes Q6_K: d·scale·(q − 32) per 16 weights, with signed scales", () => {
    const scales = Array.from({ length: 16 }, (_, i) => i * 9 - 70);
    const quant = (w: number) => (w * 7) % 64;
    const values = dequantize(GgmlType.Q6_K, q6kBlock(0x3400, scales, quant), 256); // d = 0.25
    const scaleOf = (w: number) => scales[8 * (w >> 7) + ((w & 31) >> 4) + 2 * ((w & 127) >> 5)]!;
    expect(Array.from(values)).toEqual(Array.from({ length: 256 }, (_, w) => 0.25 * scaleOf(w) * (quant(w) - 32)));
  });

  it("decodes several blocks in a row and refuses a partial block", () => {
    const block = q6kBlock(0x3c00, new Array(16).fill(1), () => 33);
    const two = new Uint8Array(420);
    two.set(block, 0);
    two.set(block, 210);
    expect(dequantize(GgmlType.Q6_K, two, 512).every((v) => v === 1)).toBe(true);
    expect(() => dequantize(GgmlType.Q4_K, new Uint8Array(144), 128)).toThrow(/whole Q4_K blocks/);
  });

  for (const [type, bound] of [[GgmlType.Q4_K, 0.08], [GgmlType.Q5_K, 0.04], [GgmlType.Q6_K, 0.02]] as const) {
    it(`round-trips ${GgmlType[type]} through the fixture encoder within ${bound} of values in ±1`, () => {
      const values = Float32Array.from({ length: 512 }, (_, i) => Math.sin(i * 1.7) * (i % 64 === 0 ? 1 : 0.6));
      const decoded = dequantize(type, quantize(type, values), 512);
      values.forEach((v, i) => expect(Math.abs(decoded[i]! - v)).toBeLessThanOrEqual(bound));
    });
  }
});
