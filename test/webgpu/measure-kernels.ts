/**
 * Prints kernel throughput on the current adapter (not a test: timings are never asserted).
 * Run: node node_modules/vite-node/vite-node.mjs test/webgpu/measure-kernels.ts (env GEMV_ROWS=4|8, GEMV_TYPES=Q4_1,Q8_0)
 */
import { openGpuDevice } from "../../src/engine/backends/webgpu/device.js";
import { GgmlType, typeName } from "../../src/engine/backends/webgpu/gguf/quant-types.js";
import { availableParallelism } from "node:os";
import { balancedLaunch, createGemv, gemvInvocations } from "../../src/engine/backends/webgpu/kernels/gemv.js";
import { weightPlanes } from "../../src/engine/backends/webgpu/kernels/quant-wgsl.js";
import { bindBuffers, createKernel, createStorage, dispatch, groupsFor, type Dispatch } from "../../src/engine/backends/webgpu/kernels/run-kernel.js";

const gpu = await openGpuDevice();
const { device } = gpu;
console.log(`${gpu.info.backend} ${gpu.info.device || gpu.info.description} tier=${gpu.info.tier}`);

/** Seconds for `repeats` submits of `list` (waits for the GPU). */
async function time(list: Dispatch[], repeats: number): Promise<{ total: number; encode: number }> {
  dispatch(device, list);
  await device.queue.onSubmittedWorkDone(); // warm-up: first use compiles and allocates
  let encode = 0;
  const start = performance.now();
  for (let i = 0; i < repeats; i++) {
    const t = performance.now();
    dispatch(device, list);
    encode += performance.now() - t;
  }
  await device.queue.onSubmittedWorkDone();
  return { total: (performance.now() - start) / 1000, encode: encode / 1000 };
}

/** Random planes: the values do not matter for timing, only the bytes read. */
function randomPlanes(type: GgmlType, rows: number, cols: number): GPUBuffer[] {
  const blocks = (rows * cols) / 32;
  const words = { quants: type === GgmlType.F32 ? rows * cols : type === GgmlType.F16 ? (rows * cols) / 2 : type === GgmlType.Q8_0 ? blocks * 8 : blocks * 4, meta: blocks, high: blocks };
  return weightPlanes(type).map((plane) => {
    const data = new Uint32Array(words[plane]);
    for (let i = 0; i < data.length; i++) data[i] = plane === "meta" ? 0x1c001c00 : plane === "quants" && type === GgmlType.F32 ? 0x3c000000 : (Math.random() * 2 ** 32) >>> 0;
    return createStorage(device, data);
  });
}

const rowsPerInvocation = Number(process.env.GEMV_ROWS ?? 8) as 4 | 8;
const only = process.env.GEMV_TYPES?.split(",");
const shapes = [[GgmlType.F32, 1536, 576], [GgmlType.Q4_0, 1536, 576], [GgmlType.Q4_1, 1536, 576], [GgmlType.Q5_0, 1536, 576], [GgmlType.Q5_1, 1536, 576], [GgmlType.Q8_0, 1536, 576], [GgmlType.Q8_0, 8192, 576]] as const;
for (const [type, rows, cols] of shapes.filter(([type]) => !only || only.includes(typeName(type)))) {
  const { workgroupSize, workgroups } = balancedLaunch(gemvInvocations(rows, rowsPerInvocation), availableParallelism());
  const pipeline = createGemv(device, { type, rows, cols, rowsPerInvocation, workgroupSize });
  const bindGroup = bindBuffers(device, pipeline, [createStorage(device, cols * 4), createStorage(device, rows * 4), ...randomPlanes(type, rows, cols)]);
  const n = 20;
  const { total } = await time(Array.from({ length: n }, () => ({ pipeline, bindGroup, workgroups })), 3);
  console.log(`GEMV ${typeName(type)} ${rows}x${cols} (${rowsPerInvocation} rows/inv): ${((rows * cols * n * 3) / total / 1e9).toFixed(2)} Gweights/s`);
}

const trivial = createKernel(device, `@group(0) @binding(0) var<storage, read_write> v: array<f32>;
@compute @workgroup_size(64) fn main(@builtin(global_invocation_id) gid: vec3<u32>) { v[gid.x] += 1.0; }`);
const bindGroup = bindBuffers(device, trivial, [createStorage(device, 256)]);
for (const count of [100, 400]) {
  const { total, encode } = await time(Array.from({ length: count }, () => ({ pipeline: trivial, bindGroup, workgroups: 1 })), 5);
  console.log(`trivial dispatch x${count}/submit: ${((total / count / 5) * 1e6).toFixed(1)} µs each (JS encode ${((encode / count / 5) * 1e6).toFixed(1)} µs)`);
}
gpu.destroy();
