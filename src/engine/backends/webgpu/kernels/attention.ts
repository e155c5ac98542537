/**
 * Attention for one decode token over the KV cache, in three barrier-free passes: scores, softmax, ·V.
 * GQA: query head h reads kv head h / (HEADS / KV_HEADS). Caches are [kvHead][MAX_CTX][HEAD_DIM], f32 or f16;
 * scores are [HEADS][MAX_CTX]; the output is [HEADS][HEAD_DIM], the input of the O projection.
 */
import { declareKvCache, decodeKvQuad, kvHelpersWgsl, type KvCacheType } from "./kv-cache-wgsl.js";
import type { AttentionShape } from "./rope.js";
import { createKernel } from "./run-kernel.js";
import { stepWgsl } from "./step.js";

const shapeWgsl = `
override HEADS: u32;
override KV_HEADS: u32;
override HEAD_DIM: u32;
override MAX_CTX: u32;
${stepWgsl}
@group(0) @binding(0) var<uniform> step: Step;`;

/** s[h,t] = q_h·k_t/√D. One invocation per (kv head, t) serving its query heads, so each K row is read once. */
export function scoresWgsl(kv: KvCacheType = "f32"): string {
  return /* wgsl */ `${shapeWgsl}
@group(0) @binding(1) var<storage, read> q: array<vec4<f32>>;
${declareKvCache(2, "k_cache", kv, "quad", "read")}
${kvHelpersWgsl(kv)}
@group(0) @binding(3) var<storage, read_write> scores: array<f32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let kvh = gid.x / step.kv_len;
  let t = gid.x % step.kv_len;
  if (kvh >= KV_HEADS) { return; }
  let n = HEAD_DIM / 4u;
  let group = HEADS / KV_HEADS;
  let scale = inverseSqrt(f32(HEAD_DIM));
  for (var g = 0u; g < group; g++) {
    let h = kvh * group + g;
    var s = 0.0;
    for (var d = 0u; d < n; d++) { s += dot(q[h * n + d], ${decodeKvQuad(kv, "k_cache[(kvh * MAX_CTX + t) * n + d]")}); }
    scores[h * MAX_CTX + t] = s * scale;
  }
}`;
}

/** In-place softmax over t < kv_len, one invocation per head (serial over t: kv_len is small next to the GEMVs). */
export const softmaxWgsl = /* wgsl */ `${shapeWgsl}
@group(0) @binding(1) var<storage, read_write> scores: array<f32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let h = gid.x;
  if (h >= HEADS) { return; }
  let base = h * MAX_CTX;
  var m = scores[base];
  for (var t = 1u; t < step.kv_len; t++) { m = max(m, scores[base + t]); }
  var sum = 0.0;
  for (var t = 0u; t < step.kv_len; t++) { let e = exp(scores[base + t] - m); scores[base + t] = e; sum += e; }
  let inv = 1.0 / sum;
  for (var t = 0u; t < step.kv_len; t++) { scores[base + t] *= inv; }
}`;

/** o[h, 4c..4c+3] = Σ_t p[h,t]·v_t[4c..4c+3]; one invocation per (head, 4 dims). */
export function weightedValuesWgsl(kv: KvCacheType = "f32"): string {
  return /* wgsl */ `${shapeWgsl}
@group(0) @binding(1) var<storage, read> scores: array<f32>;
${declareKvCache(2, "v_cache", kv, "quad", "read")}
${kvHelpersWgsl(kv)}
@group(0) @binding(3) var<storage, read_write> out: array<vec4<f32>>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let n = HEAD_DIM / 4u;
  let h = gid.x / n;
  let c = gid.x % n;
  if (h >= HEADS) { return; }
  let kvh = h / (HEADS / KV_HEADS);
  var o = vec4<f32>(0.0);
  for (var t = 0u; t < step.kv_len; t++) { o += scores[h * MAX_CTX + t] * ${decodeKvQuad(kv, "v_cache[(kvh * MAX_CTX + t) * n + c]")}; }
  out[gid.x] = o;
}`;
}

/** The three attention pipelines for one shape. */
export interface AttentionPipelines {
  scores: GPUComputePipeline;
  softmax: GPUComputePipeline;
  weightedValues: GPUComputePipeline;
}

/** Compiles the three passes. Grids: scores kvHeads·kvLen, softmax heads, weightedValues heads·headDim/4. */
export function createAttention(device: GPUDevice, s: AttentionShape): AttentionPipelines {
  const constants = { HEADS: s.heads, KV_HEADS: s.kvHeads, HEAD_DIM: s.headDim, MAX_CTX: s.maxCtx };
  return {
    scores: createKernel(device, scoresWgsl(s.kv), constants, "attn-scores"),
    softmax: createKernel(device, softmaxWgsl, constants, "attn-softmax"),
    weightedValues: createKernel(device, weightedValuesWgsl(s.kv), constants, "attn-values"),
  };
}
