/**
 * RoPE for one decode token, fused with the KV-cache write. Llama GGUFs use NORM pairing: adjacent pairs
 * (2i, 2i+1) rotate together (the converter permuted Q/K for it); NEOX models pair i with i + headDim/2.
 */
import { declareKvCache, encodeKv, type KvCacheType } from "./kv-cache-wgsl.js";
import { createKernel } from "./run-kernel.js";
import { stepWgsl } from "./step.js";

/** The shape constants and the step uniform both RoPE kernels start with. */
const ROPE_HEADER = `override HEADS: u32;
override KV_HEADS: u32;
override HEAD_DIM: u32;
override MAX_CTX: u32;
${stepWgsl}`;

/**
 * `qkv` holds [q: HEADS·D][k: KV_HEADS·D][v: KV_HEADS·D] as the QKV GEMVs wrote it. q and k rotate in place; k
 * goes to `k_cache` and v to `v_cache`, both [kvHead][MAX_CTX][D] of `kv`. NORM: one invocation per pair (2i, 2i+1).
 * NEOX: one per two pairs (2j, 2j + D/2) and (2j+1, 2j+1 + D/2), so it still loads and stores whole vec2 units.
 * The angle comes from a table (cos, sin) per [pos][i], computed in f64 on the CPU, which avoids f32 sin of large
 * arguments. Bindings: step, qkv, table, k_cache, v_cache, and with `placed` a batch's places: token t goes to position
 * places[t].y of slot places[t].x ([slot][kvHead][MAX_CTX][D] caches); without, to position step.pos + t of the only one.
 */
export function ropeKvWgsl(kv: KvCacheType = "f32", style: RopeStyle = "norm", placed = false): string {
  const neox = style === "neox";
  return /* wgsl */ `
${ROPE_HEADER}
@group(0) @binding(0) var<uniform> step: Step;
@group(0) @binding(1) var<storage, read_write> qkv: array<vec2<f32>>;
@group(0) @binding(2) var<storage, read> table: array<vec2<f32>>;
${declareKvCache(3, "k_cache", kv, "pair", "read_write")}
${declareKvCache(4, "v_cache", kv, "pair", "read_write")}
${placed ? `@group(0) @binding(5) var<storage, read> places: array<vec2<u32>>;
fn place(token: u32) -> vec2<u32> { return places[token]; }` : "fn place(token: u32) -> vec2<u32> { return vec2<u32>(0u, step.pos + token); }"}
fn rotate(v: vec2<f32>, cs: vec2<f32>) -> vec2<f32> { return vec2<f32>(v.x * cs.x - v.y * cs.y, v.x * cs.y + v.y * cs.x); }
fn store(head: u32, at_place: vec2<u32>, unit: u32, v: vec2<f32>) {
  let at = ((at_place.x * KV_HEADS + (head - HEADS) % KV_HEADS) * MAX_CTX + at_place.y) * (HEAD_DIM / 2u) + unit;
  if (head >= HEADS + KV_HEADS) { v_cache[at] = ${encodeKv(kv, "pair", "v")}; } else if (head >= HEADS) { k_cache[at] = ${encodeKv(kv, "pair", "v")}; }
}
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let half = HEAD_DIM / 2u;
  let per_head = ${neox ? "HEAD_DIM / 4u" : "half"};
  // A batch: invocations past one token's heads serve the batch's next tokens.
  let token = gid.x / ((HEADS + 2u * KV_HEADS) * per_head);
  let head = (gid.x / per_head) % (HEADS + 2u * KV_HEADS);
  let i = gid.x % per_head;
  if (token >= step.tokens) { return; }
  let at_place = place(token);
  let pos = at_place.y;
  let base = token * (HEADS + 2u * KV_HEADS) * half;
  let rotates = head < HEADS + KV_HEADS;
  ${neox ? `// units i and i + D/4 hold dims (2i, 2i+1) and (2i + D/2, 2i+1 + D/2): x pairs with x, y with y.
  let lo_at = base + head * half + i;
  let hi_at = lo_at + HEAD_DIM / 4u;
  var lo = qkv[lo_at];
  var hi = qkv[hi_at];
  if (rotates) {
    let c0 = table[pos * half + 2u * i];
    let c1 = table[pos * half + 2u * i + 1u];
    let x = rotate(vec2<f32>(lo.x, hi.x), c0);
    let y = rotate(vec2<f32>(lo.y, hi.y), c1);
    lo = vec2<f32>(x.x, y.x);
    hi = vec2<f32>(x.y, y.y);
    qkv[lo_at] = lo;
    qkv[hi_at] = hi;
  }
  if (head >= HEADS) { store(head, at_place, i, lo); store(head, at_place, i + HEAD_DIM / 4u, hi); }` : `let p = base + head * half + i;
  var v = qkv[p];
  if (rotates) {
    v = rotate(v, table[pos * half + i]);
    qkv[p] = v;
  }
  if (head >= HEADS) { store(head, at_place, i, v); }`}
}`;
}

/**
 * The same rotation and KV write as an epilogue of the fused QKV GEMV (design §1.2 #1), which saves a dispatch per
 * layer: an invocation owns rows r0..r0+3, i.e. two whole NORM pairs of one head, so it rotates them in registers.
 * Declares bindings `first`..`first+3`: step, table, k_cache, v_cache (caches as vec4: HEAD_DIM % 4 == 0). With
 * `bias`, the GEMV's bias (bound before these) is added before the rotation, as qwen2 does.
 */
export function ropeKvEpilogueWgsl(first: number, kv: KvCacheType = "f32", bias = false): string {
  return /* wgsl */ `
${ROPE_HEADER}
@group(0) @binding(${first}) var<uniform> step: Step;
@group(0) @binding(${first + 1}) var<storage, read> table: array<vec2<f32>>;
${declareKvCache(first + 2, "k_cache", kv, "quad", "read_write")}
${declareKvCache(first + 3, "v_cache", kv, "quad", "read_write")}
fn store_rows(r0: u32, acc: vec4<f32>) {
  let q_rows = HEADS * HEAD_DIM;
  let k_end = q_rows + KV_HEADS * HEAD_DIM;
  var v = acc${bias ? " + vec4<f32>(bias[r0], bias[r0 + 1u], bias[r0 + 2u], bias[r0 + 3u])" : ""};
  if (r0 < k_end) {
    let at = step.pos * (HEAD_DIM / 2u) + (r0 % HEAD_DIM) / 2u;
    let c0 = table[at];
    let c1 = table[at + 1u];
    v = vec4<f32>(v.x * c0.x - v.y * c0.y, v.x * c0.y + v.y * c0.x, v.z * c1.x - v.w * c1.y, v.z * c1.y + v.w * c1.x);
  }
  y[r0] = v.x; y[r0 + 1u] = v.y; y[r0 + 2u] = v.z; y[r0 + 3u] = v.w;
  if (r0 >= q_rows) {
    let kv_row = (r0 - q_rows) % (KV_HEADS * HEAD_DIM);
    let slot = (((kv_row / HEAD_DIM) * MAX_CTX + step.pos) * HEAD_DIM + kv_row % HEAD_DIM) / 4u;
    if (r0 < k_end) { k_cache[slot] = ${encodeKv(kv, "quad", "v")}; } else { v_cache[slot] = ${encodeKv(kv, "quad", "v")}; }
  }
}`;
}

/** Shapes of the attention block. */
export interface AttentionShape {
  heads: number;
  kvHeads: number;
  headDim: number;
  maxCtx: number;
  /** KV cache element type (default f32). */
  kv?: KvCacheType;
}

/** The override constants of kernels over the attention shape. */
export function shapeConstants(s: AttentionShape): Record<string, number> {
  return { HEADS: s.heads, KV_HEADS: s.kvHeads, HEAD_DIM: s.headDim, MAX_CTX: s.maxCtx };
}

/** Which dims RoPE pairs (see LlamaConfig.ropeStyle). */
export type RopeStyle = "norm" | "neox";

/** Pipeline for ropeKvWgsl; dispatch groupsFor(ropeKvInvocations(shape, style)). */
export function createRopeKv(device: GPUDevice, s: AttentionShape, style: RopeStyle = "norm", placed = false): GPUComputePipeline {
  if (style === "neox" && s.headDim % 4 !== 0) throw new RangeError("NEOX RoPE needs a head dim that is a multiple of 4");
  return createKernel(device, ropeKvWgsl(s.kv, style, placed), shapeConstants(s), "rope-kv");
}

/** Invocations of the RoPE + KV kernel for `tokens` tokens: one per pair (NORM) or per two pairs (NEOX). */
export function ropeKvInvocations(s: AttentionShape, style: RopeStyle = "norm", tokens = 1): number {
  return (tokens * (s.heads + 2 * s.kvHeads) * s.headDim) / (style === "neox" ? 4 : 2);
}

/** How positions map to angles (llama.cpp's rope parameters). */
export interface RopeScaling {
  theta: number;
  /** Leading dims of a head that rotate (default: all); later pairs get cos 1, sin 0. */
  ropeDim?: number;
  /** Linear scaling: positions are divided by this (default 1). */
  positionScale?: number;
  /** Per-pair frequency divisors (Llama 3.1's rope_freqs.weight). */
  freqFactors?: ArrayLike<number>;
}

/** The (cos, sin) table, interleaved, [maxCtx][headDim/2]: angle_i = (pos/scale)·θ^(−2i/ropeDim)/factor_i, in f64. */
export function buildRopeTable(maxCtx: number, headDim: number, scaling: RopeScaling): Float32Array {
  const half = headDim / 2;
  const ropeDim = scaling.ropeDim ?? headDim;
  const table = new Float32Array(maxCtx * headDim);
  for (let i = 0; i < half; i++) {
    const rotates = 2 * i < ropeDim;
    const freq = scaling.theta ** ((-2 * i) / ropeDim) / (scaling.freqFactors?.[i] ?? 1);
    for (let pos = 0; pos < maxCtx; pos++) {
      const angle = rotates ? (pos / (scaling.positionScale ?? 1)) * freq : 0;
      table[(pos * half + i) * 2] = Math.cos(angle);
      table[(pos * half + i) * 2 + 1] = Math.sin(angle);
    }
  }
  return table;
}
