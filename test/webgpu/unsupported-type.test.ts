/**
 * A GGUF holding a quantization the WebGPU backend has no kernels for fails at load, naming the tensor and the type,
 * and leaves nothing behind (the device serves the next model).
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { openGpuDevice } from "../../src/engine/backends/webgpu/device.js";
import { loadWebGpuModel } from "../../src/engine/backends/webgpu/webgpu-model.js";
import { sequentialIds } from "../../src/lib/ids.js";
import { tinyGgufBytes } from "../helpers/tiny-gguf.js";
import { webGpuAvailable } from "../helpers/webgpu.js";

const available = await webGpuAvailable();
const dir = mkdtempSync(join(tmpdir(), "kiln-webgpu-type-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const Q3_K = 11;

/** The tiny model with one tensor's declared type changed (its data offsets stay valid: Q3_K rows are smaller). */
function withTensorType(bytes: Buffer, tensor: string, type: number): Buffer {
  const name = Buffer.from(tensor, "latin1");
  const at = bytes.indexOf(name);
  const dims = bytes.readUInt32LE(at + name.length);
  bytes.writeUInt32LE(type, at + name.length + 4 + dims * 8);
  return bytes;
}

describe.skipIf(!available)("a quantization the WebGPU backend cannot run", () => {
  it("fails at load with an error naming the tensor and the type", async () => {
    // K-quants need rows of 256 weights: a feed-forward width of 256 makes ffn_down's rows that long.
    const path = join(dir, "q3k.gguf");
    writeFileSync(path, withTensorType(tinyGgufBytes(1, { shape: { feedForward: 256 } }), "blk.0.ffn_down.weight", Q3_K));
    expect(readFileSync(path).subarray(0, 4).toString("latin1")).toBe("GGUF");
    const gpu = await openGpuDevice();
    try {
      await expect(loadWebGpuModel({ id: "q3k", path, gpu, ctxSize: 64, ids: sequentialIds() })).rejects.toMatchObject({
        code: "backend_failure",
        message: expect.stringMatching(/blk\.0\.ffn_down\.weight is Q3_K/),
      });
    } finally {
      gpu.destroy();
    }
  });
});
