/**
 * Attention for a batch of tokens: token t, at place (slot, pos) = places[t], attends to positions 0..pos of its
 * sequence's cache (causal), with an online softmax (running max, sum and output, rescaled when the max grows), so
 * there is no scores buffer. Two designs:
 * - portable (software adapters): one invocation per (query head, token) walks its positions alone, no barrier;
 * - lanes (real GPUs, where that leaves the GPU idle on long contexts): one workgroup per (query head, token) takes
 *   the positions a chunk of `lanes` at a time, each lane scoring one position; then the lanes, in groups of
 *   HEAD_DIM / 4 (one output quad each), share the chunk's positions for p·V, and the groups' sums are added at the end.
 * The batch's own keys and values are already in the cache (the RoPE kernel writes them first). A prompt's batch places
 * its tokens at consecutive positions of one slot; a decode step places one token of each sequence in its own slot.
 * q is [tokens][q|k|v] as the QKV GEMVs wrote it; out is [tokens][HEADS·HEAD_DIM]; the caches are
 * [slot][kvHead][MAX_CTX][HEAD_DIM] (see kv-arena.ts).
 */
import { declareKvCache, decodeKvQuad, kvHelpersWgsl, type KvCacheType } from "./kv-cache-wgsl.js";
import type { AttentionShape } from "./rope.js";
import { createKernel } from "./run-kernel.js";
import { stepWgsl } from "./step.js";

/** Declarations both designs share. */
function headerWgsl(kv: KvCacheType): string {
  return /* wgsl */ `
override HEADS: u32;
override KV_HEADS: u32;
override MAX_CTX: u32;
${stepWgsl}
@group(0) @binding(0) var<uniform> step: Step;
@group(0) @binding(1) var<storage, read> qkv: array<vec4<f32>>;
${declareKvCache(2, "k_cache", kv, "quad", "read")}
${declareKvCache(3, "v_cache", kv, "quad", "read")}
@group(0) @binding(4) var<storage, read_write> out: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read> places: array<vec2<u32>>;
${kvHelpersWgsl(kv)}`;
}

/** Bindings: step, qkv, k_cache, v_cache, out, places. Portable: dispatch groupsFor(heads · tokens). */
export function causalAttentionWgsl(s: AttentionShape): string {
  const n = s.headDim / 4;
  const kv = s.kv ?? "f32";
  return /* wgsl */ `${headerWgsl(kv)}
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let h = gid.x % HEADS;
  let t = gid.x / HEADS;
  if (t >= step.tokens) { return; }
  let kvh = places[t].x * KV_HEADS + h / (HEADS / KV_HEADS);
  let q_at = t * (HEADS + 2u * KV_HEADS) * ${n}u + h * ${n}u;
  var q: array<vec4<f32>, ${n}>;
  for (var d = 0u; d < ${n}u; d++) { q[d] = qkv[q_at + d] * ${1 / Math.sqrt(s.headDim)}; }
  var o: array<vec4<f32>, ${n}>;
  var m = -3.0e38;
  var l = 0.0;
  let last = places[t].y;
  for (var p = 0u; p <= last; p++) {
    let row = (kvh * MAX_CTX + p) * ${n}u;
    var score = 0.0;
    for (var d = 0u; d < ${n}u; d++) { score += dot(q[d], ${decodeKvQuad(kv, "k_cache[row + d]")}); }
    if (score > m) {
      let c = exp(m - score);
      l *= c;
      for (var d = 0u; d < ${n}u; d++) { o[d] *= c; }
      m = score;
    }
    let e = exp(score - m);
    l += e;
    for (var d = 0u; d < ${n}u; d++) { o[d] += e * ${decodeKvQuad(kv, "v_cache[row + d]")}; }
  }
  let out_at = (t * HEADS + h) * ${n}u;
  for (var d = 0u; d < ${n}u; d++) { out[out_at + d] = o[d] / l; }
}`;
}

/** Bindings as the portable design's. Lanes: dispatch (heads, tokens) workgroups. */
export function causalAttentionLanesWgsl(s: AttentionShape, lanes: number): string {
  const n = s.headDim / 4;
  const kv = s.kv ?? "f32";
  const groups = Math.floor(lanes / n);
  return /* wgsl */ `${headerWgsl(kv)}
const LANES = ${lanes}u;
var<workgroup> scores: array<f32, ${lanes}>;
var<workgroup> sums: array<vec4<f32>, ${lanes}>;
var<workgroup> totals: array<f32, ${lanes}>;
@compute @workgroup_size(${lanes})
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lane: u32) {
  let h = wg.x;
  let t = wg.y;
  if (t >= step.tokens) { return; } // the whole workgroup: barriers stay in uniform control flow
  let kvh = places[t].x * KV_HEADS + h / (HEADS / KV_HEADS);
  let q_at = t * (HEADS + 2u * KV_HEADS) * ${n}u + h * ${n}u;
  let last = places[t].y;
  // Lane = group g (positions g, g + ${groups}, … of each chunk) × output quad c; lanes past the groups only score.
  let c = lane % ${n}u;
  let g = lane / ${n}u;
  var m = -3.0e38;
  var l = 0.0;
  var o = vec4<f32>(0.0);
  for (var c0 = 0u; c0 <= last; c0 += LANES) {
    let p = c0 + lane;
    var score = -3.0e38;
    if (p <= last) {
      let row = (kvh * MAX_CTX + p) * ${n}u;
      score = 0.0;
      for (var d = 0u; d < ${n}u; d++) { score += dot(qkv[q_at + d], ${decodeKvQuad(kv, "k_cache[row + d]")}); }
      score *= ${1 / Math.sqrt(s.headDim)};
    }
    scores[lane] = score;
    workgroupBarrier();
    // Every lane takes the chunk's max itself (broadcast reads), so all rescale alike.
    let count = min(LANES, last + 1u - c0);
    var top = m;
    for (var i = 0u; i < count; i++) { top = max(top, scores[i]); }
    let rescale = exp(m - top);
    l *= rescale;
    o *= rescale;
    m = top;
    if (g < ${groups}u) {
      for (var i = g; i < count; i += ${groups}u) {
        let e = exp(scores[i] - m);
        l += e;
        o += e * ${decodeKvQuad(kv, `v_cache[(kvh * MAX_CTX + c0 + i) * ${n}u + c]`)};
      }
    }
    workgroupBarrier(); // the next chunk overwrites the scores
  }
  sums[lane] = o;
  totals[lane] = l;
  workgroupBarrier();
  if (lane < ${n}u) {
    var acc = vec4<f32>(0.0);
    var total = 0.0;
    for (var k = 0u; k < ${groups}u; k++) { acc += sums[k * ${n}u + lane]; total += totals[k * ${n}u + lane]; }
    out[(t * HEADS + h) * ${n}u + lane] = acc / total;
  }
}`;
}

/** Lanes of a (head, token) workgroup of the lanes design: one chunk of positions per round of barriers. */
export const CAUSAL_ATTENTION_LANES = 64;

/**
 * Pipeline for one shape: the portable design, or with `lanes` the lanes design (a head's HEAD_DIM / 4 output quads
 * must fit in them).
 */
export function createCausalAttention(device: GPUDevice, s: AttentionShape, lanes?: number): GPUComputePipeline {
  if (s.headDim % 4 !== 0) throw new RangeError("causal attention needs a head dim that is a multiple of 4");
  if (lanes !== undefined && s.headDim / 4 > lanes) throw new RangeError(`causal attention over ${lanes} lanes takes head dims up to ${4 * lanes}`);
  const code = lanes === undefined ? causalAttentionWgsl(s) : causalAttentionLanesWgsl(s, lanes);
  return createKernel(device, code, { HEADS: s.heads, KV_HEADS: s.kvHeads, MAX_CTX: s.maxCtx }, "causal-attention");
}
