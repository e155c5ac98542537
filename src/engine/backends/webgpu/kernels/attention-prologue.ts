/**
 * Attention as the prologue of the O projection, for software adapters: each workgroup of the O GEMV first computes
 * the whole attention output into workgroup memory (one lane per query head, serial over the context with an online
 * softmax: the running maximum rescales what was summed so far), waits at one barrier, and then multiplies it by its
 * rows of W_o. On llvmpipe a workgroup runs on one CPU thread and the O GEMV has one workgroup per thread, so the
 * attention is computed once per thread, which costs less than a dispatch of its own; a GPU keeps the separate
 * workgroup-per-head kernel (attention.ts), whose parallelism long contexts need.
 * GQA: query head h reads kv head h / (HEADS / KV_HEADS); caches are [kvHead][MAX_CTX][HEAD_DIM], f32 or f16.
 */
import { declareKvCache, decodeKvQuad, kvHelpersWgsl, type KvCacheType } from "./kv-cache-wgsl.js";
import type { AttentionShape } from "./rope.js";
import { stepWgsl } from "./step.js";

/**
 * Declarations from binding `first` on (step, k_cache, v_cache; q is the GEMV's binding 0), the workgroup array `xs`
 * the GEMV reads as its input, and `attend(lane)`, which the GEMV calls before anything else.
 */
export function attentionPrologueWgsl(first: number, s: AttentionShape): string {
  const kv: KvCacheType = s.kv ?? "f32";
  const n = s.headDim / 4;
  return /* wgsl */ `
override HEADS: u32;
override KV_HEADS: u32;
override HEAD_DIM: u32;
override MAX_CTX: u32;
${stepWgsl}
@group(0) @binding(${first}) var<uniform> step: Step;
${declareKvCache(first + 1, "k_cache", kv, "quad", "read")}
${declareKvCache(first + 2, "v_cache", kv, "quad", "read")}
${kvHelpersWgsl(kv)}
var<workgroup> xs: array<vec4<f32>, ${s.heads * n}>;
fn attend_head(h: u32) {
  let kvh = h / (HEADS / KV_HEADS);
  let scale = inverseSqrt(f32(HEAD_DIM));
  var qh: array<vec4<f32>, ${n}>;
  var o: array<vec4<f32>, ${n}>;
  for (var d = 0u; d < ${n}u; d++) { qh[d] = q[h * ${n}u + d] * scale; o[d] = vec4<f32>(0.0); }
  var m = -3.0e38;
  var sum = 0.0;
  for (var t = 0u; t < step.kv_len; t++) {
    let row = (kvh * MAX_CTX + t) * ${n}u;
    var s = 0.0;
    for (var d = 0u; d < ${n}u; d++) { s += dot(qh[d], ${decodeKvQuad(kv, "k_cache[row + d]")}); }
    let top = max(m, s);
    let shrink = exp(m - top);
    let p = exp(s - top);
    sum = sum * shrink + p;
    for (var d = 0u; d < ${n}u; d++) { o[d] = o[d] * shrink + p * ${decodeKvQuad(kv, "v_cache[row + d]")}; }
    m = top;
  }
  for (var d = 0u; d < ${n}u; d++) { xs[h * ${n}u + d] = o[d] / sum; }
}
fn attend(lane: u32) {
  for (var h = lane; h < HEADS; h += WG) { attend_head(h); }
  workgroupBarrier();
}`;
}
