import { describe, expect, it } from "vitest";
import { GgmlType, typeName } from "../gguf/quant-types.js";
import { createDequantize, createEmbed } from "./dequantize.js";
import { device, noGpu, randomPlanar, uploadPlanes } from "./gpu-test-kit.fixture.js";
import { bindBuffers, createStorage, dispatch, groupsFor, readFloats } from "./run-kernel.js";

const TYPES = [GgmlType.F32, GgmlType.F16, GgmlType.Q4_0, GgmlType.Q4_1, GgmlType.Q5_0, GgmlType.Q5_1, GgmlType.Q8_0, GgmlType.Q4_K, GgmlType.Q5_K, GgmlType.Q6_K];

/** Largest distance in float32 ulps (of the expected value) between two arrays. */
function maxUlps(actual: Float32Array, expected: Float32Array): number {
  let worst = 0;
  for (let i = 0; i < expected.length; i++) {
    const ulp = Math.max(2 ** -149, 2 ** (Math.floor(Math.log2(Math.abs(expected[i]!) || 2 ** -126)) - 23));
    worst = Math.max(worst, Math.abs(actual[i]! - expected[i]!) / ulp);
  }
  return worst;
}

describe.skipIf(noGpu)("dequantize kernel (planar → f32)", () => {
  for (const type of TYPES) {
    it(`matches the JS dequantizer within 1 ulp for ${typeName(type)}`, async () => {
      const rows = 6;
      const cols = type >= GgmlType.Q4_K ? 256 : 96; // K-quant rows are whole 256-blocks
      const { tensor, values } = randomPlanar(type, rows, cols, 100 + type);
      const blocks = (rows * cols) / 32;
      const out = createStorage(device(), values.byteLength);
      const pipeline = createDequantize(device(), type, blocks);
      dispatch(device(), [{ pipeline, bindGroup: bindBuffers(device(), pipeline, [out, ...uploadPlanes(tensor)]), workgroups: groupsFor(blocks) }]);
      expect(maxUlps(await readFloats(device(), out, values.length), values)).toBeLessThanOrEqual(1);
    });
  }

  it("embeds the rows named by GPU-side token ids, one per id, clamping ids past the table", async () => {
    const rows = 5;
    const cols = 64;
    const { tensor, values } = randomPlanar(GgmlType.Q8_0, rows, cols, 7);
    const out = createStorage(device(), cols * 4);
    const pipeline = createEmbed(device(), GgmlType.Q8_0, rows, cols);
    for (const [id, row] of [[3, 3], [0, 0], [99, 4]] as const) {
      const token = { buffer: createStorage(device(), new Uint32Array([id])), size: 4 }; // one id: one row
      dispatch(device(), [{ pipeline, bindGroup: bindBuffers(device(), pipeline, [token, out, ...uploadPlanes(tensor)]), workgroups: 1 }]);
      expect(maxUlps(await readFloats(device(), out, cols), values.subarray(row * cols, (row + 1) * cols))).toBeLessThanOrEqual(1);
    }
    const batch = createStorage(device(), 3 * cols * 4);
    const ids = createStorage(device(), new Uint32Array([4, 0, 2]));
    dispatch(device(), [{ pipeline, bindGroup: bindBuffers(device(), pipeline, [{ buffer: ids, size: 12 }, batch, ...uploadPlanes(tensor)]), workgroups: 1 }]);
    const embedded = await readFloats(device(), batch, 3 * cols);
    [4, 0, 2].forEach((row, k) => expect(maxUlps(embedded.subarray(k * cols, (k + 1) * cols), values.subarray(row * cols, (row + 1) * cols))).toBeLessThanOrEqual(1));
  });

  it.each([4, 8] as const)("prepares the first RMSNorm with the row (g⊙x and Σx² per %i values)", async (chunk) => {
    const rows = 5;
    const cols = 64;
    const { tensor, values } = randomPlanar(GgmlType.Q8_0, rows, cols, 8);
    const gain = Float32Array.from({ length: cols }, (_, k) => 0.5 + k / cols);
    const [out, next, sums] = [createStorage(device(), cols * 4), createStorage(device(), cols * 4), createStorage(device(), (cols / chunk) * 4)];
    const pipeline = createEmbed(device(), GgmlType.Q8_0, rows, cols, chunk);
    const token = { buffer: createStorage(device(), new Uint32Array([2])), size: 4 };
    dispatch(device(), [{ pipeline, bindGroup: bindBuffers(device(), pipeline, [token, out, ...uploadPlanes(tensor), createStorage(device(), gain), next, sums]), workgroups: 1 }]);
    const row = values.subarray(2 * cols, 3 * cols);
    expect(maxUlps(await readFloats(device(), out, cols), row)).toBeLessThanOrEqual(1);
    const scaled = await readFloats(device(), next, cols);
    row.forEach((v, k) => expect(scaled[k]).toBeCloseTo(v * gain[k]!, 5));
    const partial = await readFloats(device(), sums, cols / chunk);
    partial.forEach((sum, c) => expect(sum).toBeCloseTo(row.slice(c * chunk, (c + 1) * chunk).reduce((a, v) => a + v * v, 0), 4));
  });
});
