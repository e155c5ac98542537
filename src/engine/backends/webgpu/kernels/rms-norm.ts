/** Standalone RMSNorm (decode folds it into the next GEMV; this serves prefill rows and tests). */
import { createKernel } from "./run-kernel.js";

/** One invocation per row: y = x·rsqrt(mean(x²)+ε)·g. Bindings: x, y, gain. */
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

/** Pipeline for `rows` rows of `cols` (a multiple of 4); dispatch groupsFor(rows). */
export function createRmsNorm(device: GPUDevice, rows: number, cols: number, eps = 1e-5): GPUComputePipeline {
  return createKernel(device, rmsNormWgsl, { ROWS: rows, COLS: cols, EPS: eps }, "rms-norm");
}
