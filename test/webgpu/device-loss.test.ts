/**
 * A lost GPU device fails the request in flight with a clear engine error instead of crashing the process, and the
 * model refuses further requests the same way.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { openGpuDevice } from "../../src/engine/backends/webgpu/device.js";
import { loadWebGpuModel } from "../../src/engine/backends/webgpu/webgpu-model.js";
import { sequentialIds } from "../../src/lib/ids.js";
import { writeTinyGguf } from "../helpers/tiny-gguf.js";
import { webGpuAvailable } from "../helpers/webgpu.js";
import { userRequest } from "../helpers/stream-events.js";

const available = await webGpuAvailable();
const dir = mkdtempSync(join(tmpdir(), "kiln-webgpu-loss-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe.skipIf(!available)("WebGPU device loss", () => {
  it("turns a destroyed device into backend_failure errors, request after request", async () => {
    const gpu = await openGpuDevice();
    const model = await loadWebGpuModel({ id: "tiny", path: await writeTinyGguf(join(dir, "tiny.gguf"), 2), gpu, ctxSize: 128, ids: sequentialIds() });
    const events: string[] = [];
    let failure: unknown;
    try {
      for await (const event of model.generate(userRequest("tiny", "hello", { maxTokens: 32 }))) {
        events.push(event.type);
        if (event.type === "text-delta") gpu.destroy();
      }
    } catch (error) {
      failure = error;
    }
    expect(events[0]).toBe("start");
    expect(failure).toMatchObject({ code: "backend_failure" });
    expect(String((failure as Error).message)).toMatch(/WebGPU/);
    const next = async () => { for await (const _ of model.generate(userRequest("tiny", "again", { maxTokens: 2 }))) { /* drain */ } };
    await expect(next()).rejects.toMatchObject({ code: "backend_failure" });
    await model.dispose();
  });
});
