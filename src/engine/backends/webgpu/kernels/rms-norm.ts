/**
 * Standalone RMSNorm (decode folds it into the next GEMV; this serves the batch plan's rows and tests):
 * y = x·rsqrt(mean(x²)+ε)·g. Bindings: x, y, gain.
 */
import { createKernel } from "./run-kernel.js";

/** Lanes of a workgroup sharing a row on a GPU (createRmsNorm with `lanes`). */
export const RMS_NORM_LANES = 64;

/**
 * One invocation per row: the portable kernel for software adapters, where a row walked by one thread is what a CPU
 * does best. On a GPU it leaves the card idle: a 64-token batch is one workgroup whose threads each walk 1,536 values
 * twice, 0.21 ms a dispatch on an H100, 19% of a prompt chunk's GPU time.
 */
export const rmsNormWgsl = /* wgsl */ `
override ROWS: u32;
override COLS: u32;
override EPS: f32 = 1e-5;
@group(0) @binding(0) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> y: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> gain: array<vec4<f32>>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let r = gid.x;
  if (r >= ROWS) { return; }
  let n = COLS / 4u;
  var ss = 0.0;
  for (var k = 0u; k < n; k++) { let v = x[r * n + k]; ss += dot(v, v); }
  let scale = inverseSqrt(ss / f32(COLS) + EPS);
  for (var k = 0u; k < n; k++) { y[r * n + k] = x[r * n + k] * scale * gain[k]; }
}`;

/**
 * A workgroup per row for GPUs: its lanes read adjacent vec4s of the row (coalesced), a tree reduction in workgroup
 * memory adds their squares, and they write the row back the same way.
 */
export function rmsNormLanesWgsl(lanes: number): string {
  return /* wgsl */ `
override ROWS: u32;
override COLS: u32;
override EPS: f32 = 1e-5;
const LANES = ${lanes}u;
@group(0) @binding(0) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> y: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> gain: array<vec4<f32>>;
var<workgroup> sums: array<f32, LANES>;
@compute @workgroup_size(LANES)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lane: u32) {
  let r = wg.x;
  // The same for the whole workgroup, so the barriers below stay in uniform control flow.
  if (r >= ROWS) { return; }
  let n = COLS / 4u;
  var ss = 0.0;
  for (var k = lane; k < n; k += LANES) { let v = x[r * n + k]; ss += dot(v, v); }
  sums[lane] = ss;
  for (var half = LANES / 2u; half > 0u; half /= 2u) {
    workgroupBarrier();
    if (lane < half) { sums[lane] += sums[lane + half]; }
  }
  workgroupBarrier();
  let scale = inverseSqrt(sums[0] / f32(COLS) + EPS);
  for (var k = lane; k < n; k += LANES) { y[r * n + k] = x[r * n + k] * scale * gain[k]; }
}`;
}

/**
 * Pipeline for `rows` rows of `cols` (a multiple of 4). Without `lanes`: one invocation per row, dispatch
 * groupsFor(rows); with `lanes` (a power of two): a workgroup per row, dispatch `rows` workgroups.
 */
export function createRmsNorm(device: GPUDevice, rows: number, cols: number, eps = 1e-5, lanes?: number): GPUComputePipeline {
  if (lanes !== undefined && (!Number.isInteger(Math.log2(lanes)) || lanes > device.limits.maxComputeInvocationsPerWorkgroup)) {
    throw new RangeError(`RMSNorm lanes must be a power of two up to the device's workgroup size, got ${lanes}`);
  }
  const wgsl = lanes === undefined ? rmsNormWgsl : rmsNormLanesWgsl(lanes);
  return createKernel(device, wgsl, { ROWS: rows, COLS: cols, EPS: eps }, lanes === undefined ? "rms-norm" : "rms-norm-lanes");
}
