import { describe, expect, it } from "vitest";
import { SHAPE, packHalves, stepAt, unpackHalves } from "./attention-kit.fixture.js";
import { attentionGroups, createAttention } from "./attention.js";
import { device, maxAbsDiff, noGpu, randomFloats } from "./gpu-test-kit.fixture.js";
import { bindBuffers, createStorage, dispatch, readFloats } from "./run-kernel.js";

/** f64 attention of one token: per query head, softmax(q·K/√D)·V over its kv head (GQA). */
function attend(q: Float32Array, k: Float32Array, v: Float32Array, kvLen: number, maxCtx: number): Float64Array {
  const { heads, kvHeads, headDim: D } = SHAPE;
  const out = new Float64Array(heads * D);
  for (let h = 0; h < heads; h++) {
    const kvh = Math.floor(h / (heads / kvHeads));
    const s = Array.from({ length: kvLen }, (_, t) => {
      let dot = 0;
      for (let d = 0; d < D; d++) dot += q[h * D + d]! * k[(kvh * maxCtx + t) * D + d]!;
      return dot / Math.sqrt(D);
    });
    const m = Math.max(...s);
    const e = s.map((x) => Math.exp(x - m));
    const sum = e.reduce((a, b) => a + b, 0);
    for (let t = 0; t < kvLen; t++) for (let d = 0; d < D; d++) out[h * D + d]! += (e[t]! / sum) * v[(kvh * maxCtx + t) * D + d]!;
  }
  return out;
}

/** Short (fewer positions than lanes) and long (each lane strides over several positions) contexts. */
const CASES = [
  ["workgroup", "f32", 8, 6], ["workgroup", "f16", 8, 6], ["workgroup", "f32", 200, 150], ["workgroup", "f16", 200, 199],
  ["serial", "f32", 8, 6], ["serial", "f16", 200, 199],
] as const;

describe.skipIf(noGpu).each(CASES)("decode attention in one dispatch (%s kernel), %s KV cache, %i positions, at %i", (variant, kv, maxCtx, pos) => {
  it("matches f64 attention with GQA within 1e-5 (on the values the cache holds)", async () => {
    const shape = { ...SHAPE, maxCtx };
    const { heads, kvHeads, headDim: D } = shape;
    const q = randomFloats(heads * D, 31, 2);
    const stored = (a: Float32Array) => (kv === "f16" ? unpackHalves(packHalves(a)) : a);
    const k = stored(randomFloats(kvHeads * maxCtx * D, 32, 2));
    const v = stored(randomFloats(kvHeads * maxCtx * D, 33));
    const serial = variant === "serial";
    const p = createAttention(device(), { ...shape, kv }, serial);
    const step = stepAt(pos);
    const scores = createStorage(device(), heads * maxCtx * 4);
    const out = createStorage(device(), heads * D * 4);
    const upload = (a: Float32Array) => createStorage(device(), kv === "f16" ? packHalves(a) : a);
    const [qb, kb, vb] = [createStorage(device(), q), upload(k), upload(v)];
    dispatch(device(), [{ pipeline: p, bindGroup: bindBuffers(device(), p, [step, qb, kb, vb, ...(serial ? [] : [scores]), out]), workgroups: attentionGroups(heads, serial) }]);
    const expected = attend(q, k, v, pos + 1, maxCtx);
    expect(maxAbsDiff(await readFloats(device(), out, heads * D), expected)).toBeLessThanOrEqual(1e-5 * Math.max(...expected.map(Math.abs)));
  });
});
