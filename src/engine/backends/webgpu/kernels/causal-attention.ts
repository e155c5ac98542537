/**
 * Attention for a prefill batch: token t of the batch (position step.pos + t) attends to cache positions
 * 0..step.pos + t (causal). One invocation per (query head, token) walks its positions once with an online softmax
 * (running max, sum and output, rescaled when the max grows), so there is no scores buffer and no barrier. The
 * batch's own keys and values are already in the cache (the RoPE kernel writes them first).
 * q is [tokens][q|k|v] as the QKV GEMVs wrote it; out is [tokens][HEADS·HEAD_DIM].
 */
import { declareKvCache, decodeKvQuad, kvHelpersWgsl, type KvCacheType } from "./kv-cache-wgsl.js";
import type { AttentionShape } from "./rope.js";
import { createKernel } from "./run-kernel.js";
import { stepWgsl } from "./step.js";

/** Bindings: step, qkv, k_cache, v_cache, out. */
export function causalAttentionWgsl(s: AttentionShape): string {
  const n = s.headDim / 4;
  const kv = s.kv ?? "f32";
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
${kvHelpersWgsl(kv)}
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let h = gid.x % HEADS;
  let t = gid.x / HEADS;
  if (t >= step.tokens) { return; }
  let kvh = h / (HEADS / KV_HEADS);
  let q_at = t * (HEADS + 2u * KV_HEADS) * ${n}u + h * ${n}u;
  var q: array<vec4<f32>, ${n}>;
  for (var d = 0u; d < ${n}u; d++) { q[d] = qkv[q_at + d] * ${1 / Math.sqrt(s.headDim)}; }
  var o: array<vec4<f32>, ${n}>;
  var m = -3.0e38;
  var l = 0.0;
  let last = step.pos + t;
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

/** Pipeline for one shape; dispatch groupsFor(heads · tokens). */
export function createCausalAttention(device: GPUDevice, s: AttentionShape): GPUComputePipeline {
  if (s.headDim % 4 !== 0) throw new RangeError("causal attention needs a head dim that is a multiple of 4");
  return createKernel(device, causalAttentionWgsl(s), { HEADS: s.heads, KV_HEADS: s.kvHeads, MAX_CTX: s.maxCtx }, "causal-attention");
}
