import { afterAll, describe, expect, it } from "vitest";
import { EngineError } from "../../../errors/engine-error.js";
import { openGpuDevice, tryOpenGpuDevice } from "./device.js";
import { bindBuffers, createKernel, createStorage, dispatch, readFloats } from "./kernels/run-kernel.js";
import { lavapipeIcd, withLavapipe } from "./kernels/subgroup-device.fixture.js";

const gpu = await tryOpenGpuDevice();
if (!gpu) console.warn("WebGPU device tests skipped: no WebGPU adapter came up");
afterAll(() => gpu?.destroy());

describe.skipIf(!gpu)("openGpuDevice", () => {
  const { device, info, adapter } = gpu!;

  it("reports backend, adapter, tier, and opens with the adapter's limits rather than compat defaults", () => {
    expect(["vulkan", "opengles"]).toContain(info.backend);
    expect(["portable", "fast"]).toContain(info.tier);
    if (info.software) expect(info.tier).toBe("portable");
    expect(info.limits.maxStorageBuffersPerShaderStage).toBe(adapter.limits.maxStorageBuffersPerShaderStage);
    expect(device.limits.maxStorageBuffersPerShaderStage).toBe(adapter.limits.maxStorageBuffersPerShaderStage);
    expect(device.limits.maxBufferSize).toBe(adapter.limits.maxBufferSize);
  });

  it("runs a trivial kernel", async () => {
    const pipeline = createKernel(device, `
@group(0) @binding(0) var<storage, read_write> v: array<f32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) { if (gid.x < 100u) { v[gid.x] = v[gid.x] * 3.0 + f32(gid.x); } }`);
    const v = createStorage(device, Float32Array.from({ length: 100 }, (_, i) => i - 50));
    dispatch(device, [{ pipeline, bindGroup: bindBuffers(device, pipeline, [v]), workgroups: 2 }]);
    expect([...(await readFloats(device, v, 100))]).toEqual(Array.from({ length: 100 }, (_, i) => (i - 50) * 3 + i));
  });

  it("turns an uncaptured validation error into an EngineError backend_failure, then device loss resolves `lost`", async () => {
    const failures: EngineError[] = [];
    const other = await openGpuDevice({ onFailure: (e) => failures.push(e) });
    other.device.createBuffer({ size: 16, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.STORAGE }); // invalid usage mix
    await other.device.queue.onSubmittedWorkDone();
    for (let i = 0; i < 50 && !other.failure; i++) await new Promise((r) => setImmediate(r)); // errors arrive as events
    expect(other.failure).toBeInstanceOf(EngineError);
    expect(other.failure?.code).toBe("backend_failure");
    expect(failures).toHaveLength(1);
    expect(() => other.throwIfFailed()).toThrow(EngineError);
    other.destroy();
    const lost = await other.lost;
    expect(lost.code).toBe("backend_failure");
    expect(lost.details.reason).toBe("destroyed");
  });
});

// Mesa's renderer through Vulkan (lavapipe, from scripts/lavapipe.sh) and through GLES on one machine, as on a recent
// Linux without a GPU: kiln's kernels ran at half the speed through Vulkan, so the default order prefers GLES there.
const icd = lavapipeIcd();

describe.skipIf(!gpu || gpu.info.backend !== "opengles" || !icd)("a software renderer through both Vulkan and GLES", () => {
  const openWith = (backends: string[]) => withLavapipe(() => openGpuDevice({ backends }));

  it("opens GLES, the later backend, when Vulkan offers only the software renderer", async () => {
    const both = await openWith(["vulkan", "opengles"]);
    expect(both.info).toMatchObject({ backend: "opengles", software: true });
    both.destroy();
    const vulkan = await openWith(["vulkan"]);
    expect(vulkan.info).toMatchObject({ backend: "vulkan", software: true });
    vulkan.destroy();
  });
});
