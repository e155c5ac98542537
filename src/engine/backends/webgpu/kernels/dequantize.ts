/** Dequantize kernels: planar weights → f32, for whole tensors (tests, debug) and for one row (token embedding). */
import type { GgmlType } from "../gguf/quant-types.js";
import { blockValuesWgsl, declarePlanes, unpackWgsl } from "./quant-wgsl.js";
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
 * sampler's output can feed the next step without a CPU round trip. Bindings: token, out, planes.
 */
export function embedWgsl(type: GgmlType): string {
  return /* wgsl */ `
override COLS: u32;
override ROWS: u32;
@group(0) @binding(0) var<storage, read> token: array<u32>;
@group(0) @binding(1) var<storage, read_write> out: array<vec4<f32>>;
${declarePlanes(type, "w", 2)}
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
}`;
}

/** Pipeline for the embedding lookup of a [rows × cols] table (dispatch groupsFor(tokens · cols / 32)). */
export function createEmbed(device: GPUDevice, type: GgmlType, rows: number, cols: number): GPUComputePipeline {
  return createKernel(device, embedWgsl(type), { ROWS: rows, COLS: cols }, "embed");
}
