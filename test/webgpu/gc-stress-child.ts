/**
 * Child process of gc-stress.test.ts (run with --expose-gc). It keeps only the GPUDevice, dropping gpu and
 * adapter, allocates ~20 MB of JS arrays and forces gc() between dispatch rounds. dawn.node crashes here when
 * the adapter is collected under a live device, so this passes only if device.ts pins them.
 * Prints "no-adapter" and exits 0 when no adapter comes up; prints "ok <rounds>" on success.
 */
import { tryOpenGpuDevice } from "../../src/engine/backends/webgpu/device.js";
import { bindBuffers, createKernel, createStorage, dispatch, groupsFor, readFloats } from "../../src/engine/backends/webgpu/kernels/run-kernel.js";

const ROUNDS = 20;
const N = 4096;
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error("run with --expose-gc");

const device = (await tryOpenGpuDevice())?.device;
if (!device) {
  console.log("no-adapter");
  process.exit(0);
}

const pipeline = createKernel(device, /* wgsl */ `
override N: u32;
@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read_write> b: array<f32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) { if (gid.x < N) { b[gid.x] = a[gid.x] * 2.0 + 1.0; } }`, { N });

let garbage: number[][] = [];
for (let round = 0; round < ROUNDS; round++) {
  // ~20 MB of short-lived JS arrays, so the collector has real work and runs finalizers.
  garbage = Array.from({ length: 250 }, () => new Array<number>(10_000).fill(round + 0.5));
  gc();
  const input = Float32Array.from({ length: N }, (_, i) => i + round);
  const out = createStorage(device, N * 4);
  dispatch(device, [{ pipeline, bindGroup: bindBuffers(device, pipeline, [createStorage(device, input), out]), workgroups: groupsFor(N) }]);
  gc();
  const result = await readFloats(device, out, N);
  for (let i = 0; i < N; i += 97) if (result[i] !== input[i]! * 2 + 1) throw new Error(`round ${round}: wrong value at ${i}`);
  garbage.length = 0;
  gc();
}
console.log(`ok ${ROUNDS}`);
device.destroy();
