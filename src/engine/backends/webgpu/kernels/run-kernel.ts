/** A small harness over the raw WebGPU API: buffers, pipelines, bind groups, one-shot dispatches, readback. */

/** A buffer, or a range of one (weights live in arenas and bind as ranges). */
export type BufferRange = GPUBuffer | { buffer: GPUBuffer; offset?: number; size?: number };

/**
 * Creates a STORAGE buffer holding `data`, or `byteLength` zero bytes. COPY_SRC so tests and dumps can read it;
 * `extraUsage` adds more (UNIFORM for a buffer also bound as uniform windows).
 */
export function createStorage(device: GPUDevice, data: ArrayBufferView | number, label?: string, extraUsage = 0): GPUBuffer {
  const byteLength = typeof data === "number" ? data : data.byteLength;
  // Sizes round up to 16 B: vec4 arrays need it and writeBuffer wants multiples of 4.
  const size = Math.max(16, Math.ceil(byteLength / 16) * 16);
  const usage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST | GPUBufferUsage.COPY_SRC | extraUsage;
  const buffer = device.createBuffer({ size, usage, label, mappedAtCreation: typeof data !== "number" });
  if (typeof data !== "number") {
    new Uint8Array(buffer.getMappedRange()).set(new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
    buffer.unmap();
  }
  return buffer;
}

/** Creates a UNIFORM buffer (per-step values: position, kv length) of at least `byteLength` bytes. */
export function createUniform(device: GPUDevice, byteLength: number, label?: string): GPUBuffer {
  const size = Math.max(16, Math.ceil(byteLength / 16) * 16);
  return device.createBuffer({ size, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST, label });
}

/** Compiles a compute pipeline; `constants` fill the WGSL `override` declarations (shapes, so loops have fixed bounds). */
export function createKernel(device: GPUDevice, code: string, constants: Record<string, number> = {}, label?: string): GPUComputePipeline {
  const module = device.createShaderModule({ code, label });
  return device.createComputePipeline({ layout: "auto", label, compute: { module, entryPoint: "main", constants } });
}

/** Binds `buffers` to group 0 at bindings 0, 1, 2, … in order (the kernels declare them that way). */
export function bindBuffers(device: GPUDevice, pipeline: GPUComputePipeline, buffers: BufferRange[], label?: string): GPUBindGroup {
  const entries = buffers.map((b, binding) => ({ binding, resource: "buffer" in b ? b : { buffer: b } }));
  return device.createBindGroup({ layout: pipeline.getBindGroupLayout(0), entries, label });
}

/** One prebuilt dispatch: a pipeline, its bind group and its grid. */
export interface Dispatch {
  pipeline: GPUComputePipeline;
  bindGroup: GPUBindGroup;
  workgroups: number;
}

/** Records dispatches into an open pass: only setPipeline/setBindGroup/dispatchWorkgroups, nothing is created. */
export function encodeDispatches(pass: GPUComputePassEncoder, dispatches: readonly Dispatch[]): void {
  for (const d of dispatches) {
    pass.setPipeline(d.pipeline);
    pass.setBindGroup(0, d.bindGroup);
    pass.dispatchWorkgroups(d.workgroups);
  }
}

/** Submits `dispatches` in one compute pass and one command buffer. */
export function dispatch(device: GPUDevice, dispatches: readonly Dispatch[]): void {
  const encoder = device.createCommandEncoder();
  const pass = encoder.beginComputePass();
  encodeDispatches(pass, dispatches);
  pass.end();
  device.queue.submit([encoder.finish()]);
}

/** Number of 64-wide workgroups that cover `invocations` (every portable kernel uses @workgroup_size(64)). */
export function groupsFor(invocations: number): number {
  return Math.max(1, Math.ceil(invocations / 64));
}

/** Copies `byteLength` bytes of `buffer` to a mappable buffer and returns them (waits for all prior work). */
export async function readBack(device: GPUDevice, buffer: GPUBuffer, byteLength = buffer.size, offset = 0): Promise<ArrayBuffer> {
  const size = Math.ceil(byteLength / 4) * 4;
  const staging = device.createBuffer({ size, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
  const encoder = device.createCommandEncoder();
  encoder.copyBufferToBuffer(buffer, offset, staging, 0, size);
  device.queue.submit([encoder.finish()]);
  await staging.mapAsync(GPUMapMode.READ);
  const bytes = staging.getMappedRange().slice(0, byteLength);
  staging.unmap();
  staging.destroy();
  return bytes;
}

/** readBack as floats. */
export async function readFloats(device: GPUDevice, buffer: GPUBuffer, count: number, offset = 0): Promise<Float32Array> {
  return new Float32Array(await readBack(device, buffer, count * 4, offset));
}
