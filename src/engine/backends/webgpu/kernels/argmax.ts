/** Greedy sampling on the GPU: a two-stage argmax, so only the 4-byte token id is read back. Ties → lowest index. */
import { createKernel } from "./run-kernel.js";

/** Elements each stage-1 invocation scans. */
export const ARGMAX_CHUNK = 256;

/** Stage 1: invocation c scans chunk c and writes (bits of its max, its index). Bindings: logits, partial. */
export const argmaxChunksWgsl = /* wgsl */ `
override COUNT: u32;
@group(0) @binding(0) var<storage, read> logits: array<f32>;
@group(0) @binding(1) var<storage, read_write> partial: array<vec2<u32>>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let start = gid.x * ${ARGMAX_CHUNK}u;
  if (start >= COUNT) { return; }
  let end = min(start + ${ARGMAX_CHUNK}u, COUNT);
  var best = logits[start];
  var at = start;
  // Strictly greater, scanning upwards: the first of equal maxima wins, as in llama.cpp's greedy sampler.
  for (var i = start + 1u; i < end; i++) { let v = logits[i]; if (v > best) { best = v; at = i; } }
  partial[gid.x] = vec2<u32>(bitcast<u32>(best), at);
}`;

/** Stage 2: one invocation reduces the chunk results in order. Bindings: partial, token (out[0] = id). */
export const argmaxFinishWgsl = /* wgsl */ `
override CHUNKS: u32;
@group(0) @binding(0) var<storage, read> partial: array<vec2<u32>>;
@group(0) @binding(1) var<storage, read_write> token: array<u32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  if (gid.x != 0u) { return; }
  var best = bitcast<f32>(partial[0].x);
  var at = partial[0].y;
  for (var c = 1u; c < CHUNKS; c++) {
    let v = bitcast<f32>(partial[c].x);
    if (v > best) { best = v; at = partial[c].y; }
  }
  token[0] = at;
}`;

/** Chunks for `count` logits (the partial buffer holds this many vec2<u32>). */
export function argmaxChunks(count: number): number {
  return Math.ceil(count / ARGMAX_CHUNK);
}

/** The two pipelines; stage 1 dispatches groupsFor(argmaxChunks(count)), stage 2 one workgroup. */
export function createArgmax(device: GPUDevice, count: number): { chunks: GPUComputePipeline; finish: GPUComputePipeline } {
  return {
    chunks: createKernel(device, argmaxChunksWgsl, { COUNT: count }, "argmax-chunks"),
    finish: createKernel(device, argmaxFinishWgsl, { CHUNKS: argmaxChunks(count) }, "argmax-finish"),
  };
}
