/**
 * Attention for one decode token over the KV cache in one dispatch: one workgroup per query head computes the
 * scores, their softmax and the weighted sum of V, with a few barriers between the phases (never inside a loop,
 * where llvmpipe pays dearly for them).
 * GQA: query head h reads kv head h / (HEADS / KV_HEADS). Caches are [kvHead][MAX_CTX][HEAD_DIM], f32 or f16;
 * scores are [HEADS][MAX_CTX]; the output is [HEADS][HEAD_DIM], the input of the O projection.
 */
import { declareKvCache, decodeKvQuad, kvHelpersWgsl, type KvCacheType } from "./kv-cache-wgsl.js";
import { shapeConstants, type AttentionShape } from "./rope.js";
import { createKernel } from "./run-kernel.js";
import { stepWgsl } from "./step.js";

const shapeWgsl = `
override HEADS: u32;
override KV_HEADS: u32;
override HEAD_DIM: u32;
override MAX_CTX: u32;
${stepWgsl}
@group(0) @binding(0) var<uniform> step: Step;`;

/** Lanes of the attention workgroup; a head's HEAD_DIM / 4 output quads must fit in it (HEAD_DIM ≤ 256). */
export const ATTENTION_LANES = 64;

/**
 * Workgroup h serves query head h over kv head h / (HEADS / KV_HEADS). Lanes take positions t strided by 64 for
 * the scores and the exponentials (each lane rereads only what it wrote, so no barrier between those), then split
 * into groups of HEAD_DIM / 4 lanes, each group summing p·V over its share of t; the groups' sums are added at the
 * end. Bindings: step, q, k_cache, v_cache, scores ([HEADS][MAX_CTX] scratch), out ([HEADS][HEAD_DIM]).
 */
export function attentionWgsl(kv: KvCacheType = "f32"): string {
  return /* wgsl */ `${shapeWgsl}
@group(0) @binding(1) var<storage, read> q: array<vec4<f32>>;
${declareKvCache(2, "k_cache", kv, "quad", "read")}
${declareKvCache(3, "v_cache", kv, "quad", "read")}
${kvHelpersWgsl(kv)}
@group(0) @binding(4) var<storage, read_write> scores: array<f32>;
@group(0) @binding(5) var<storage, read_write> out: array<vec4<f32>>;
const LANES = ${ATTENTION_LANES}u;
var<workgroup> part: array<f32, ${ATTENTION_LANES}>;
var<workgroup> sums: array<vec4<f32>, ${ATTENTION_LANES}>;
@compute @workgroup_size(${ATTENTION_LANES})
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lane: u32) {
  let h = wg.x;
  let n = HEAD_DIM / 4u;
  let kvh = h / (HEADS / KV_HEADS);
  let base = h * MAX_CTX;
  let len = step.kv_len;
  let scale = inverseSqrt(f32(HEAD_DIM));
  var m = -3.0e38;
  for (var t = lane; t < len; t += LANES) {
    var s = 0.0;
    for (var d = 0u; d < n; d++) { s += dot(q[h * n + d], ${decodeKvQuad(kv, "k_cache[(kvh * MAX_CTX + t) * n + d]")}); }
    s *= scale;
    scores[base + t] = s;
    m = max(m, s);
  }
  part[lane] = m;
  workgroupBarrier();
  var top = part[0];
  for (var i = 1u; i < LANES; i++) { top = max(top, part[i]); }
  workgroupBarrier();
  var sum = 0.0;
  for (var t = lane; t < len; t += LANES) { let e = exp(scores[base + t] - top); scores[base + t] = e; sum += e; }
  part[lane] = sum;
  // Both: the next phase reads other lanes' exponentials (storage) and sums (workgroup memory).
  storageBarrier();
  workgroupBarrier();
  var total = 0.0;
  for (var i = 0u; i < LANES; i++) { total += part[i]; }
  let groups = LANES / n;
  let c = lane % n;
  let g = lane / n;
  var o = vec4<f32>(0.0);
  if (g < groups) {
    for (var t = g; t < len; t += groups) { o += scores[base + t] * ${decodeKvQuad(kv, "v_cache[(kvh * MAX_CTX + t) * n + c]")}; }
  }
  sums[lane] = o;
  workgroupBarrier();
  if (lane < n) {
    var acc = vec4<f32>(0.0);
    for (var k = 0u; k < groups; k++) { acc += sums[k * n + lane]; }
    out[h * n + lane] = acc / total;
  }
}`;
}

/** The attention pipeline for one shape; dispatch `heads` workgroups. */
export function createAttention(device: GPUDevice, s: AttentionShape): GPUComputePipeline {
  if (s.headDim % 4 !== 0 || s.headDim / 4 > ATTENTION_LANES) throw new RangeError(`decode attention takes head dims that are multiples of 4 up to ${4 * ATTENTION_LANES}`);
  return createKernel(device, attentionWgsl(s.kv), shapeConstants(s), "attention");
}
