/**
 * Greedy sampling on the GPU: a two-stage argmax, so only the 4-byte token id is read back. Ties → lowest index.
 * Rows of logits (one per token of a batched step) take the grid's second dimension: row r is logits[r·COUNT…].
 */
import { createKernel } from "./run-kernel.js";

/** Elements each stage-1 invocation scans. */
export const ARGMAX_CHUNK = 256;

/** Stage 1: invocation (c, r) scans chunk c of row r and writes (bits of its max, its index). Bindings: logits, partial. */
export const argmaxChunksWgsl = /* wgsl */ `
override COUNT: u32;
@group(0) @binding(0) var<storage, read> logits: array<f32>;
@group(0) @binding(1) var<storage, read_write> partial: array<vec2<u32>>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let start = gid.x * ${ARGMAX_CHUNK}u;
  if (start >= COUNT) { return; }
  let row = gid.y * COUNT;
  let end = min(start + ${ARGMAX_CHUNK}u, COUNT);
  var best = logits[row + start];
  var at = start;
  // Strictly greater, scanning upwards: the first of equal maxima wins, as in llama.cpp's greedy sampler.
  for (var i = start + 1u; i < end; i++) { let v = logits[row + i]; if (v > best) { best = v; at = i; } }
  partial[gid.y * ((COUNT + ${ARGMAX_CHUNK - 1}u) / ${ARGMAX_CHUNK}u) + gid.x] = vec2<u32>(bitcast<u32>(best), at);
}`;

/** Stage 2: one invocation per row reduces its chunk results in order. Bindings: partial, token (out[r] = row r's id). */
export const argmaxFinishWgsl = /* wgsl */ `
override CHUNKS: u32;
@group(0) @binding(0) var<storage, read> partial: array<vec2<u32>>;
@group(0) @binding(1) var<storage, read_write> token: array<u32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  if (gid.x != 0u) { return; }
  let first = gid.y * CHUNKS;
  var best = bitcast<f32>(partial[first].x);
  var at = partial[first].y;
  for (var c = 1u; c < CHUNKS; c++) {
    let v = bitcast<f32>(partial[first + c].x);
    if (v > best) { best = v; at = partial[first + c].y; }
  }
  token[gid.y] = at;
}`;

/** Chunks for `count` logits (the partial buffer holds this many vec2<u32>). */
export function argmaxChunks(count: number): number {
  return Math.ceil(count / ARGMAX_CHUNK);
}

/** The two pipelines; per row, stage 1 dispatches groupsFor(argmaxChunks(count)) workgroups, stage 2 one. */
export function createArgmax(device: GPUDevice, count: number): { chunks: GPUComputePipeline; finish: GPUComputePipeline } {
  return {
    chunks: createKernel(device, argmaxChunksWgsl, { COUNT: count }, "argmax-chunks"),
    finish: createKernel(device, argmaxFinishWgsl, { CHUNKS: argmaxChunks(count) }, "argmax-finish"),
  };
}
