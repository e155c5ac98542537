/** Dequantize kernels: planar weights → f32, for whole tensors (tests, debug) and for one row (token embedding). */
import type { GgmlType } from "../gguf/quant-types.js";
import { blockValuesWgsl, declarePlanes, unpackWgsl, weightPlanes } from "./quant-wgsl.js";
import { createKernel } from "./run-kernel.js";

/** WGSL: one invocation per 32-block writes its 32 floats. Bindings: out, then the planes. */
export function dequantizeWgsl(type: GgmlType): string {
  return /* wgsl */ `
override BLOCKS: u32;
@group(0) @binding(0) var<storage, read_write> out: array<vec4<f32>>;
${declarePlanes(type, "w", 1)}
${unpackWgsl}
${blockValuesWgsl(type, "w")}
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let i = gid.x;
  if (i >= BLOCKS) { return; }
  let v = w_values(i);
  for (var j = 0u; j < 8u; j++) { out[i * 8u + j] = v[j]; }
}`;
}

/** Pipeline that dequantizes `blocks` 32-blocks (dispatch groupsFor(blocks)). */
export function createDequantize(device: GPUDevice, type: GgmlType, blocks: number): GPUComputePipeline {
  return createKernel(device, dequantizeWgsl(type), { BLOCKS: blocks }, "dequantize");
}

/**
 * WGSL: row `token[k]` of a [vocab × cols] matrix into row k of `out` ([k][cols] floats), for the grid's tokens
 * (decode dispatches one token's blocks; prefill one per batch token). The id comes from a GPU buffer so the
 * sampler's output can feed the next step without a CPU round trip. Bindings: token, out, planes. With `normChunk`
 * (one token) it also prepares the first RMSNorm as a GEMV's residual epilogue does: g⊙x and Σx² per normChunk
 * values, with g, g⊙x and the sums bound after the planes.
 */
export function embedWgsl(type: GgmlType, normChunk?: 4 | 8): string {
  const first = 2 + weightPlanes(type).length;
  return /* wgsl */ `
override COLS: u32;
override ROWS: u32;
@group(0) @binding(0) var<storage, read> token: array<u32>;
@group(0) @binding(1) var<storage, read_write> out: array<vec4<f32>>;
${declarePlanes(type, "w", 2)}
${normChunk ? `@group(0) @binding(${first}) var<storage, read> gain: array<vec4<f32>>;
@group(0) @binding(${first + 1}) var<storage, read_write> next_x: array<vec4<f32>>;
@group(0) @binding(${first + 2}) var<storage, read_write> sums: array<f32>;` : ""}
${unpackWgsl}
${blockValuesWgsl(type, "w")}
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let nb = COLS / 32u;
  let k = gid.x / nb;
  let b = gid.x % nb;
  if (k >= arrayLength(&token)) { return; }
  let row = min(token[k], ROWS - 1u); // an out-of-range id must not read past the table
  let v = w_values(row * nb + b);
  for (var j = 0u; j < 8u; j++) { out[gid.x * 8u + j] = v[j]; }
  ${normChunk ? `for (var j = 0u; j < 8u; j++) { next_x[gid.x * 8u + j] = v[j] * gain[gid.x * 8u + j]; }
  ${Array.from({ length: 32 / normChunk }, (_, c) => {
    const quads = Array.from({ length: normChunk / 4 }, (_, i) => `dot(v[${(c * normChunk) / 4 + i}], v[${(c * normChunk) / 4 + i}])`);
    return `sums[gid.x * ${32 / normChunk}u + ${c}u] = ${quads.join(" + ")};`;
  }).join("\n  ")}` : ""}
}`;
}

/**
 * Pipeline for the embedding lookup of a [rows × cols] table (dispatch groupsFor(tokens · cols / 32)); with
 * `normChunk`, the one-token variant that also prepares the next RMSNorm in chunks of that many values (4 or 8).
 */
export function createEmbed(device: GPUDevice, type: GgmlType, rows: number, cols: number, normChunk?: 4 | 8): GPUComputePipeline {
  return createKernel(device, embedWgsl(type, normChunk), { ROWS: rows, COLS: cols }, "embed");
}
