/**
 * The WebGPU backend from the command line: `kiln info --backend webgpu` reports the adapter, `kiln run --backend
 * webgpu` generates with it (on a tiny generated model, so it stays quick on a software renderer).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { checkEventSequence, type GenerationEvent } from "../../src/engine/index.js";
import { runKiln } from "../helpers/team-cli.js";
import { writeTinyGguf } from "../helpers/tiny-gguf.js";
import { webGpuAvailable } from "../helpers/webgpu.js";

const available = await webGpuAvailable();
const dir = mkdtempSync(join(tmpdir(), "kiln-webgpu-cli-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// A WebGPU start on a software renderer takes seconds under load: the CLI runs without holding this worker's event loop.
const kiln = (...args: string[]) => runKiln(dir, args);

describe.skipIf(!available)("kiln with --backend webgpu", () => {
  it("kiln info --backend webgpu --json names the adapter, its API, tier and limits", async () => {
    const result = await kiln("info", "--backend", "webgpu", "--json");
    expect(result.code, result.stderr).toBe(0);
    const info = JSON.parse(result.stdout);
    expect(info).toMatchObject({ backend: "webgpu", tier: expect.stringMatching(/^(portable|fast)$/) });
    expect(["vulkan", "opengles", "metal", "d3d12"]).toContain(info.api);
    expect(info.limits.maxStorageBufferBindingSize).toBeGreaterThan(0);
  });

  it("kiln run --backend webgpu streams well-formed events ending with usage", async () => {
    const model = await writeTinyGguf(join(dir, "tiny.gguf"), 4);
    const result = await kiln("run", "--backend", "webgpu", "--model", model, "--max-tokens", "5", "--temperature", "0", "--json", "hello");
    expect(result.code, result.stderr).toBe(0);
    const events = result.stdout.trimEnd().split("\n").map((line) => JSON.parse(line) as GenerationEvent);
    expect(checkEventSequence(events)).toEqual([]);
    expect(events.at(-1)).toMatchObject({ type: "finish", usage: { outputTokens: expect.any(Number) } });
  });

  it("refuses an unknown backend with a usage error", async () => {
    const result = await kiln("run", "--backend", "cuda", "hi");
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/backend/);
  });
});
