import { describe, expect, it } from "vitest";
import { SHAPE, stepAt, unpackHalves } from "./attention-kit.fixture.js";
import { GgmlType } from "../gguf/quant-types.js";
import { createGemv, gemvInvocations } from "./gemv.js";
import { device, maxAbsDiff, noGpu, randomFloats, randomPlanar, uploadPlanes } from "./gpu-test-kit.fixture.js";
import { buildRopeTable, createRopeKv, ropeKvInvocations, type RopeStyle } from "./rope.js";
import { bindBuffers, createStorage, dispatch, groupsFor, readBack, readFloats } from "./run-kernel.js";

/** f64 RoPE of one head vector by pos·θ^(−2i/D): NORM pairs (2i, 2i+1), NEOX pairs (i, i + D/2). */
function rotate(v: Float32Array, pos: number, theta: number, style: RopeStyle = "norm"): Float64Array {
  const out = new Float64Array(v.length);
  const half = v.length / 2;
  for (let i = 0; i < half; i++) {
    const a = pos * theta ** ((-2 * i) / v.length);
    const [x, y] = style === "neox" ? [i, i + half] : [2 * i, 2 * i + 1];
    out[x] = v[x]! * Math.cos(a) - v[y]! * Math.sin(a);
    out[y] = v[x]! * Math.sin(a) + v[y]! * Math.cos(a);
  }
  return out;
}

describe.skipIf(noGpu).each([["f32", "norm"], ["f16", "norm"], ["f32", "neox"], ["f16", "neox"]] as const)("RoPE + KV store kernel, %s KV cache, %s pairing", (kv, style) => {
  it("rotates the pairs of q and k, stores rotated k and raw v at pos", async () => {
    const { heads, kvHeads, headDim: D, maxCtx } = SHAPE;
    const theta = 10000;
    const pos = 5;
    const qkv = randomFloats((heads + 2 * kvHeads) * D, 21);
    const qkvBuffer = createStorage(device(), qkv);
    const cacheBytes = kvHeads * maxCtx * D * (kv === "f16" ? 2 : 4);
    const kCache = createStorage(device(), cacheBytes);
    const vCache = createStorage(device(), cacheBytes);
    const pipeline = createRopeKv(device(), { ...SHAPE, kv }, style);
    const table = createStorage(device(), buildRopeTable(maxCtx, D, { theta }));
    const bindGroup = bindBuffers(device(), pipeline, [stepAt(pos), qkvBuffer, table, kCache, vCache]);
    dispatch(device(), [{ pipeline, bindGroup, workgroups: groupsFor(ropeKvInvocations({ ...SHAPE, kv }, style)) }]);
    const out = await readFloats(device(), qkvBuffer, qkv.length);
    const k = await readCache(kCache, kv);
    const v = await readCache(vCache, kv);
    // An f16 cache holds each value rounded to half: allow half an f16 ulp on top of the f32 tolerance.
    const cacheTolerance = kv === "f16" ? 2 ** -11 * 4 : 1e-5;
    for (let h = 0; h < heads + kvHeads; h++) {
      const expected = rotate(qkv.subarray(h * D, (h + 1) * D), pos, theta, style);
      expect(maxAbsDiff(out.subarray(h * D, (h + 1) * D), expected)).toBeLessThanOrEqual(1e-5);
      if (h >= heads) expect(maxAbsDiff(k.subarray(((h - heads) * maxCtx + pos) * D, ((h - heads) * maxCtx + pos + 1) * D), expected)).toBeLessThanOrEqual(cacheTolerance);
    }
    for (let j = 0; j < kvHeads; j++) {
      const vRow = qkv.subarray((heads + kvHeads + j) * D, (heads + kvHeads + j + 1) * D);
      expect(maxAbsDiff(v.subarray((j * maxCtx + pos) * D, (j * maxCtx + pos + 1) * D), vRow)).toBeLessThanOrEqual(kv === "f16" ? cacheTolerance : 0);
      expect(k[(j * maxCtx + pos - 1) * D]).toBe(0); // other positions stay untouched
    }
  });
});

describe.skipIf(noGpu).each([["f32", "norm"], ["f16", "neox"]] as const)("RoPE + KV store of a placed batch, %s KV cache, %s pairing", (kv, style) => {
  it("rotates each token by its own position and stores it in its own sequence's slot", async () => {
    const { heads, kvHeads, headDim: D, maxCtx } = SHAPE;
    const theta = 10000;
    const width = (heads + 2 * kvHeads) * D;
    const places = [[1, 5], [0, 2], [1, 6]] as const;
    const qkv = randomFloats(places.length * width, 22);
    const qkvBuffer = createStorage(device(), qkv);
    const slotValues = kvHeads * maxCtx * D;
    const cacheBytes = 2 * slotValues * (kv === "f16" ? 2 : 4);
    const kCache = createStorage(device(), cacheBytes);
    const vCache = createStorage(device(), cacheBytes);
    const pipeline = createRopeKv(device(), { ...SHAPE, kv }, style, true);
    const table = createStorage(device(), buildRopeTable(maxCtx, D, { theta }));
    const buffers = [stepAt(0, places.length), qkvBuffer, table, kCache, vCache, createStorage(device(), Uint32Array.from(places.flat()))];
    dispatch(device(), [{ pipeline, bindGroup: bindBuffers(device(), pipeline, buffers), workgroups: groupsFor(ropeKvInvocations({ ...SHAPE, kv }, style, places.length)) }]);
    const out = await readFloats(device(), qkvBuffer, qkv.length);
    const k = await readCache(kCache, kv, 2);
    const v = await readCache(vCache, kv, 2);
    const cacheTolerance = kv === "f16" ? 2 ** -11 * 4 : 1e-5;
    places.forEach(([slot, pos], t) => {
      const row = (j: number) => slot * slotValues + (j * maxCtx + pos) * D;
      for (let h = 0; h < heads + kvHeads; h++) {
        const expected = rotate(qkv.subarray(t * width + h * D, t * width + (h + 1) * D), pos, theta, style);
        expect(maxAbsDiff(out.subarray(t * width + h * D, t * width + (h + 1) * D), expected), `token ${t} head ${h}`).toBeLessThanOrEqual(1e-5);
        if (h >= heads) expect(maxAbsDiff(k.subarray(row(h - heads), row(h - heads) + D), expected)).toBeLessThanOrEqual(cacheTolerance);
      }
      for (let j = 0; j < kvHeads; j++) {
        const vRow = qkv.subarray(t * width + (heads + kvHeads + j) * D, t * width + (heads + kvHeads + j + 1) * D);
        expect(maxAbsDiff(v.subarray(row(j), row(j) + D), vRow)).toBeLessThanOrEqual(kv === "f16" ? cacheTolerance : 0);
      }
    });
    // Slot 0 got only position 2: its position 5 stays untouched.
    expect(k[5 * D]).toBe(0);
  });
});

/** A cache buffer's values as f32, whatever it stores. */
async function readCache(buffer: GPUBuffer, kv: "f32" | "f16", slots = 1): Promise<Float32Array> {
  const count = slots * SHAPE.kvHeads * SHAPE.maxCtx * SHAPE.headDim;
  return kv === "f16" ? unpackHalves(new Uint32Array(await readBack(device(), buffer, count * 2))) : readFloats(device(), buffer, count);
}

describe.skipIf(noGpu).each([[4, "f32"], [8, "f16"]] as const)("QKV GEMV with the RoPE + KV epilogue, %i rows per invocation, %s KV cache", (rowsPerInvocation, kv) => {
  it("gives rotated q, k, raw v and the cache rows of W·x̂ at pos", async () => {
    const { heads, kvHeads, headDim: D, maxCtx } = SHAPE;
    const rows = (heads + 2 * kvHeads) * D;
    const cols = 64;
    const pos = 3;
    const theta = 10000;
    const { tensor, values } = randomPlanar(GgmlType.Q8_0, rows, cols, 51);
    const x = randomFloats(cols, 52);
    const gain = randomFloats(cols, 53);
    const y = createStorage(device(), rows * 4);
    const kCache = createStorage(device(), kvHeads * maxCtx * D * (kv === "f16" ? 2 : 4));
    const vCache = createStorage(device(), kvHeads * maxCtx * D * (kv === "f16" ? 2 : 4));
    const pipeline = createGemv(device(), { type: GgmlType.Q8_0, rows, cols, norm: true, epilogue: "rope-kv", attention: { ...SHAPE, kv }, rowsPerInvocation });
    const table = createStorage(device(), buildRopeTable(maxCtx, D, { theta }));
    // The normed input as the kernel that wrote x leaves it: g⊙x, and Σx² per rowsPerInvocation values.
    const input = Float32Array.from(x, (v, k) => v * gain[k]!);
    const sums = Float32Array.from({ length: cols / rowsPerInvocation }, (_, c) => x.slice(c * rowsPerInvocation, (c + 1) * rowsPerInvocation).reduce((a, v) => a + v * v, 0));
    const buffers = [createStorage(device(), input), y, createStorage(device(), sums), ...uploadPlanes(tensor), stepAt(pos), table, kCache, vCache];
    dispatch(device(), [{ pipeline, bindGroup: bindBuffers(device(), pipeline, buffers), workgroups: groupsFor(gemvInvocations(rows, rowsPerInvocation)) }]);
    const scale = 1 / Math.sqrt(x.reduce((s, v) => s + v * v, 0) / cols + 1e-5);
    const projected = Float32Array.from({ length: rows }, (_, r) => values.subarray(r * cols, (r + 1) * cols).reduce((s, w, k) => s + w * x[k]! * gain[k]! * scale, 0));
    const out = await readFloats(device(), y, rows);
    const k = await readCache(kCache, kv);
    const v = await readCache(vCache, kv);
    const tolerance = 1e-5 * cols * 2;
    const cacheTolerance = kv === "f16" ? tolerance + 2 ** -11 * 16 : tolerance; // outputs reach ~10: half an f16 ulp
    for (let h = 0; h < heads + 2 * kvHeads; h++) {
      const head = projected.subarray(h * D, (h + 1) * D);
      const expected = h < heads + kvHeads ? rotate(head, pos, theta) : Float64Array.from(head);
      expect(maxAbsDiff(out.subarray(h * D, (h + 1) * D), expected)).toBeLessThanOrEqual(tolerance);
      const cache = h >= heads + kvHeads ? v : h >= heads ? k : undefined;
      const slot = ((h - heads) % kvHeads) * maxCtx + pos;
      if (cache) expect(maxAbsDiff(cache.subarray(slot * D, (slot + 1) * D), expected)).toBeLessThanOrEqual(cacheTolerance);
    }
  });
});

describe("buildRopeTable", () => {
  it("gives (cos, sin) of (pos/scale)·θ^(−2i/ropeDim) and leaves pairs past ropeDim unrotated", () => {
    const table = buildRopeTable(4, 8, { theta: 100, ropeDim: 4, positionScale: 2 });
    const at = (pos: number, i: number) => [table[(pos * 4 + i) * 2]!, table[(pos * 4 + i) * 2 + 1]!];
    const angle = (pos: number, i: number) => (pos / 2) * 100 ** ((-2 * i) / 4);
    for (const [pos, i] of [[3, 0], [3, 1], [1, 1]] as const) {
      expect(at(pos, i)[0]).toBeCloseTo(Math.cos(angle(pos, i)), 6);
      expect(at(pos, i)[1]).toBeCloseTo(Math.sin(angle(pos, i)), 6);
    }
    expect([...at(3, 2), ...at(3, 3)]).toEqual([1, 0, 1, 0]);
  });
});
