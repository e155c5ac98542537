import { describe, expect, it } from "vitest";
import { SHAPE, packHalves, stepAt, unpackHalves } from "./attention-kit.fixture.js";
import { GgmlType } from "../gguf/quant-types.js";
import { createAttention } from "./attention.js";
import { CAUSAL_ATTENTION_LANES, createCausalAttention } from "./causal-attention.js";
import { createGemv } from "./gemv.js";
import { device, dispatchGrid, maxAbsDiff, noGpu, randomFloats, randomPlanar, uploadPlanes } from "./gpu-test-kit.fixture.js";
import { bindBuffers, createStorage, dispatch, groupsFor, readFloats } from "./run-kernel.js";

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
const CASES = [["f32", 8, 6], ["f16", 8, 6], ["f32", 200, 150], ["f16", 200, 199]] as const;

/** Random q and caches (rounded as an f16 cache stores them), uploaded, with the f64 attention they should give. */
function attentionCase(kv: "f32" | "f16", maxCtx: number, pos: number) {
  const { heads, kvHeads, headDim: D } = SHAPE;
  const q = randomFloats(heads * D, 31, 2);
  const stored = (a: Float32Array) => (kv === "f16" ? unpackHalves(packHalves(a)) : a);
  const k = stored(randomFloats(kvHeads * maxCtx * D, 32, 2));
  const v = stored(randomFloats(kvHeads * maxCtx * D, 33));
  const upload = (a: Float32Array) => createStorage(device(), kv === "f16" ? packHalves(a) : a);
  return { q: createStorage(device(), q), k, v, kBuffer: upload(k), vBuffer: upload(v), step: stepAt(pos), expected: attend(q, k, v, pos + 1, maxCtx) };
}

describe.skipIf(noGpu).each(CASES)("decode attention in one dispatch, %s KV cache, %i positions, at %i", (kv, maxCtx, pos) => {
  it("matches f64 attention with GQA within 1e-5 (on the values the cache holds)", async () => {
    const { heads, headDim: D } = SHAPE;
    const c = attentionCase(kv, maxCtx, pos);
    const p = createAttention(device(), { ...SHAPE, maxCtx, kv });
    const scores = createStorage(device(), heads * maxCtx * 4);
    const out = createStorage(device(), heads * D * 4);
    dispatch(device(), [{ pipeline: p, bindGroup: bindBuffers(device(), p, [c.step, c.q, c.kBuffer, c.vBuffer, scores, out]), workgroups: heads }]);
    expect(maxAbsDiff(await readFloats(device(), out, heads * D), c.expected)).toBeLessThanOrEqual(1e-5 * Math.max(...c.expected.map(Math.abs)));
  });

  it("as the O projection's prologue: y += W_o·attention, every workgroup computing the attention itself", async () => {
    const { heads, headDim: D } = SHAPE;
    const cols = heads * D;
    const rows = 24;
    const c = attentionCase(kv, maxCtx, pos);
    const { tensor, values } = randomPlanar(GgmlType.Q8_0, rows, cols, 34);
    const initial = randomFloats(rows, 35);
    const y = createStorage(device(), initial);
    // 8 rows per invocation, 3 invocations in workgroups of 2: two workgroups each compute the attention.
    const pipeline = createGemv(device(), { type: GgmlType.Q8_0, epilogue: "residual", attend: true, rowsPerInvocation: 8, rows, cols, workgroupSize: 2, attention: { ...SHAPE, maxCtx, kv } });
    dispatch(device(), [{ pipeline, bindGroup: bindBuffers(device(), pipeline, [c.q, y, ...uploadPlanes(tensor), c.step, c.kBuffer, c.vBuffer]), workgroups: 2 }]);
    const expected = Float64Array.from({ length: rows }, (_, r) => initial[r]! + c.expected.reduce((sum, a, k) => sum + values[r * cols + k]! * a, 0));
    // f32 summation drift: bounded by the sum of the terms' magnitudes.
    const magnitude = Math.max(...Array.from({ length: rows }, (_, r) => Math.abs(initial[r]!) + c.expected.reduce((sum, a, k) => sum + Math.abs(values[r * cols + k]! * a), 0)));
    expect(maxAbsDiff(await readFloats(device(), y, rows), expected)).toBeLessThanOrEqual(1e-5 * magnitude);
  });
});

/**
 * Batches of tokens at their places: a prompt's `tokens` consecutive positions from `pos` in one slot (within one chunk
 * of lanes, and over several chunks with a partial last one: contexts 131..135 with 64 lanes; with 4 lanes, 2 groups
 * of 2 quads share each chunk's positions), and a decode step's one token per sequence, each in its own slot at its
 * own position.
 */
const BATCHES = [["f32", 8, 0, 3], ["f32", 200, 130, 5], ["f16", 200, 130, 5]] as const;
const DESIGNS = [{ name: "portable" }, { name: `${CAUSAL_ATTENTION_LANES} lanes`, lanes: CAUSAL_ATTENTION_LANES }, { name: "8 lanes", lanes: 8 }] as const;
const SLOTS = 3;

describe.skipIf(noGpu).each(BATCHES)("causal attention of a batch, %s KV cache, %i positions, from %i, %i tokens", (kv, maxCtx, pos, tokens) => {
  const { heads, kvHeads, headDim: D } = SHAPE;
  const width = (heads + 2 * kvHeads) * D;
  const slotValues = kvHeads * maxCtx * D;
  const stored = (a: Float32Array) => (kv === "f16" ? unpackHalves(packHalves(a)) : a);
  const upload = (a: Float32Array) => createStorage(device(), kv === "f16" ? packHalves(a) : a);
  // Every slot holds different keys and values: a token reading another sequence's cache gives another answer.
  const k = stored(randomFloats(SLOTS * slotValues, 32, 2));
  const v = stored(randomFloats(SLOTS * slotValues, 33));
  const slot = (a: Float32Array, s: number) => a.subarray(s * slotValues, (s + 1) * slotValues);
  const prompt = Array.from({ length: tokens }, (_, t) => [1, pos + t] as const);
  const decode = Array.from({ length: tokens }, (_, t) => [(t * 2) % SLOTS, (pos + 7 * t) % maxCtx] as const);

  it.each(DESIGNS.flatMap((design) => [{ ...design, batch: "prompt", places: prompt }, { ...design, batch: "decode", places: decode }]))(
    "matches f64 attention per token over its own sequence's prefix: $name, $batch",
    async ({ places, ...design }) => {
      // Token t's q is the first heads·D values of its q|k|v row (k and v there are the RoPE kernel's business).
      const qkv = randomFloats(tokens * width, 36, 2);
      const expected = places.map(([s, at], t) => attend(qkv.subarray(t * width, t * width + heads * D), slot(k, s), slot(v, s), at + 1, maxCtx));
      const lanes = "lanes" in design ? design.lanes : undefined;
      const p = createCausalAttention(device(), { ...SHAPE, maxCtx, kv }, lanes);
      const out = createStorage(device(), tokens * heads * D * 4);
      const buffers = [stepAt(0, tokens), createStorage(device(), qkv), upload(k), upload(v), out, createStorage(device(), Uint32Array.from(places.flat()))];
      dispatchGrid(p, buffers, lanes === undefined ? [groupsFor(heads * tokens), 1] : [heads, tokens]);
      const actual = await readFloats(device(), out, tokens * heads * D);
      expected.forEach((e, t) => expect(maxAbsDiff(actual.subarray(t * heads * D, (t + 1) * heads * D), e), `token ${t}`).toBeLessThanOrEqual(1e-5 * Math.max(...e.map(Math.abs))));
    },
  );
});
