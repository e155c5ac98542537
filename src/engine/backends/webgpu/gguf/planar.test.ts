import { describe, expect, it } from "vitest";
import { mulberry32 } from "../../../../../test/helpers/tiny-gguf.js";
import { dequantize, quantize } from "./codecs.js";
import { dequantizePlanar, repackPlanar } from "./planar.js";
import { GgmlType, typeName } from "./quant-types.js";

const TYPES = [GgmlType.F32, GgmlType.F16, GgmlType.Q4_0, GgmlType.Q4_1, GgmlType.Q5_0, GgmlType.Q5_1, GgmlType.Q8_0, GgmlType.Q4_K, GgmlType.Q5_K, GgmlType.Q6_K];

function randomBytes(type: GgmlType, rows: number, cols: number, seed: number): Uint8Array {
  const random = mulberry32(seed);
  return quantize(type, Float32Array.from({ length: rows * cols }, () => random() * 2 - 1));
}

describe("repackPlanar", () => {
  it.each(TYPES.map((type) => [typeName(type), type] as const))("decodes %s from its planes exactly as dequantize does from GGUF bytes", (_, type) => {
    const rows = 5;
    const cols = type >= GgmlType.Q4_K ? 512 : 96; // K-quant rows are whole 256-blocks
    const bytes = randomBytes(type, rows, cols, 3 + type);
    const planar = repackPlanar(type, bytes, rows, cols);
    expect(planar).toMatchObject({ type, rows, cols });
    expect(dequantizePlanar(planar)).toEqual(dequantize(type, bytes, rows * cols));
  });

  it("sizes the planes as the layout says", () => {
    const blocks = (4 * 64) / 32;
    const q4 = repackPlanar(GgmlType.Q4_1, randomBytes(GgmlType.Q4_1, 4, 64, 1), 4, 64);
    expect([q4.quants.length, q4.meta.length, q4.high.length]).toEqual([4 * blocks, blocks, 0]);
    const q5 = repackPlanar(GgmlType.Q5_0, randomBytes(GgmlType.Q5_0, 4, 64, 1), 4, 64);
    expect([q5.quants.length, q5.meta.length, q5.high.length]).toEqual([4 * blocks, blocks, blocks]);
    const q8 = repackPlanar(GgmlType.Q8_0, randomBytes(GgmlType.Q8_0, 4, 64, 1), 4, 64);
    expect([q8.quants.length, q8.meta.length]).toEqual([8 * blocks, blocks]);
    const f16 = repackPlanar(GgmlType.F16, randomBytes(GgmlType.F16, 4, 64, 1), 4, 64);
    expect([f16.quants.length, f16.meta.length]).toEqual([128, 0]);
  });

  it("puts d low and m high in meta, and the raw qs bytes in quants", () => {
    const bytes = randomBytes(GgmlType.Q4_1, 1, 32, 7);
    const view = new DataView(bytes.buffer);
    const planar = repackPlanar(GgmlType.Q4_1, bytes, 1, 32);
    expect(planar.meta[0]).toBe((view.getUint16(0, true) | (view.getUint16(2, true) << 16)) >>> 0);
    expect(planar.quants[0]).toBe(view.getUint32(4, true));
    const q8 = randomBytes(GgmlType.Q8_0, 1, 32, 7);
    const q8Planar = repackPlanar(GgmlType.Q8_0, q8.subarray(0), 1, 32);
    expect(q8Planar.meta[0]! >>> 16).toBe(0);
    expect(q8Planar.quants[7]).toBe(new DataView(q8.buffer).getUint32(30, true));
  });

  it("reads unaligned views and refuses bad shapes", () => {
    const bytes = randomBytes(GgmlType.Q8_0, 2, 32, 11);
    const shifted = new Uint8Array(bytes.length + 1);
    shifted.set(bytes, 1);
    expect(repackPlanar(GgmlType.Q8_0, shifted.subarray(1), 2, 32)).toEqual(repackPlanar(GgmlType.Q8_0, bytes, 2, 32));
    expect(() => repackPlanar(GgmlType.Q4_0, bytes, 1, 48)).toThrow(/multiple of 32/);
    expect(() => repackPlanar(GgmlType.Q4_0, new Uint8Array(10), 1, 32)).toThrow(/needs 18 bytes/);
    expect(() => repackPlanar(GgmlType.Q4_K, new Uint8Array(144), 1, 96)).toThrow(/whole Q4_K blocks/);
  });
});
