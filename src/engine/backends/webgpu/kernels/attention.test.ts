import { describe, expect, it } from "vitest";
import { SHAPE, packHalves, stepAt, unpackHalves } from "./attention-kit.fixture.js";
import { createAttention } from "./attention.js";
import { device, maxAbsDiff, noGpu, randomFloats } from "./gpu-test-kit.fixture.js";
import { bindBuffers, createStorage, dispatch, groupsFor, readFloats } from "./run-kernel.js";

/** f64 attention of one token: per query head, softmax(q·K/√D)·V over its kv head (GQA). */
function attend(q: Float32Array, k: Float32Array, v: Float32Array, kvLen: number): Float64Array {
  const { heads, kvHeads, headDim: D, maxCtx } = SHAPE;
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

describe.skipIf(noGpu).each(["f32", "f16"] as const)("decode attention kernels (scores, softmax, ·V), %s KV cache", (kv) => {
  it("matches f64 attention with GQA within 1e-5 (on the values the cache holds)", async () => {
    const { heads, kvHeads, headDim: D, maxCtx } = SHAPE;
    const pos = 6;
    const q = randomFloats(heads * D, 31, 2);
    const stored = (a: Float32Array) => (kv === "f16" ? unpackHalves(packHalves(a)) : a);
    const k = stored(randomFloats(kvHeads * maxCtx * D, 32, 2));
    const v = stored(randomFloats(kvHeads * maxCtx * D, 33));
    const p = createAttention(device(), { ...SHAPE, kv });
    const step = stepAt(pos);
    const scores = createStorage(device(), heads * maxCtx * 4);
    const out = createStorage(device(), heads * D * 4);
    const upload = (a: Float32Array) => createStorage(device(), kv === "f16" ? packHalves(a) : a);
    const [qb, kb, vb] = [createStorage(device(), q), upload(k), upload(v)];
    dispatch(device(), [
      { pipeline: p.scores, bindGroup: bindBuffers(device(), p.scores, [step, qb, kb, scores]), workgroups: groupsFor(kvHeads * (pos + 1)) },
      { pipeline: p.softmax, bindGroup: bindBuffers(device(), p.softmax, [step, scores]), workgroups: groupsFor(heads) },
      { pipeline: p.weightedValues, bindGroup: bindBuffers(device(), p.weightedValues, [step, scores, vb, out]), workgroups: groupsFor((heads * D) / 4) },
    ]);
    const expected = attend(q, k, v, pos + 1);
    expect(maxAbsDiff(await readFloats(device(), out, heads * D), expected)).toBeLessThanOrEqual(1e-5 * Math.max(...expected.map(Math.abs)));
  });
});
