/**
 * llama.cpp's GPU flags and memory facts as users meet them: the built binary (build first) on the real default model.
 * `--gpu none` and `--gpu-layers 0` run on the CPU and say so; a context far beyond memory and a GPU backend this
 * machine lacks are one-line errors, not crashes; `kiln info` lists the devices with their memory.
 */
import { spawn } from "node:child_process";
import { join } from "node:path";
import { getLlamaGpuTypes } from "node-llama-cpp";
import { afterEach, describe, expect, it } from "vitest";
import { hasGpuDeviceNode, hasVulkanLoader } from "../../src/lib/vulkan.js";
import { lavapipeIcd } from "../../src/engine/backends/webgpu/kernels/subgroup-device.fixture.js";
import { makeModelHome, runKilnCli, spawnServe, type ServeProcess } from "../helpers/spawn-serve.js";

/** The GPU backends node-llama-cpp finds usable here (a CPU-only machine: none). */
const usable = await getLlamaGpuTypes("supported");

let serve: ServeProcess | undefined;

afterEach(async () => {
  serve?.child.kill("SIGTERM");
  await serve?.exited;
  serve = undefined;
});

const BIN = join(import.meta.dirname, "..", "..", "bin", "kiln.js");

/** `kiln run <args>` with an empty stdin (run reads a piped stdin to its end), in the store `home`. */
function kilnRun(home: string, args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, "run", ...args], { env: { ...process.env, ...env, KILN_HOME: home } });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
    child.stdin.end();
  });
}

/** The start-up line of the default model. */
async function startupLine(args: string[]): Promise<string> {
  serve = await spawnServe(["--parallel", "1", "--log-level", "error", ...args]);
  return serve.waitForLog(/^model smollm2-135m/);
}

/** The `kiln:` lines of stderr: an error is one of them, and no stack trace follows it. */
function kilnLines(stderr: string): string[] {
  return stderr.split("\n").filter((line) => line.startsWith("kiln:"));
}

describe("kiln serve on the CPU", () => {
  it("--gpu none puts every layer and the KV cache on the CPU, with a default context that fits, and says so", async () => {
    const line = await startupLine(["--gpu", "none"]);
    expect(line).toMatch(/^model smollm2-135m \(default\): 31 layers on the CPU, KV cache \d+ MiB in RAM, context \d+ × 1 \((the model's own|what fits in memory)\), file 94 MiB/);
    // Not the old cap of 4,096: the model's own 8,192 tokens wherever a quarter of the free RAM holds them.
    const context = Number(/context (\d+) ×/.exec(line)![1]);
    expect(context === 8192 || (context >= 2048 && context % 1024 === 0)).toBe(true);

    const listed = (await (await fetch(`${serve!.url}/v1/models`)).json()) as { data: { context_length: number; details: Record<string, unknown> }[] };
    expect(listed.data[0]).toMatchObject({ context_length: context, details: { gpu: false, gpuLayers: 0, layers: 31, contextSizeSource: expect.any(String) } });
    expect(line).toContain(String(listed.data[0]!.details.placement));
    const ps = await runKilnCli(serve!.home, ["ps", "--url", serve!.url]);
    expect(ps.code, ps.stderr).toBe(0);
    expect(ps.stdout).toMatch(/^MODEL\s+BACKEND\s+MEMORY\s+CONTEXT\s+SEQUENCES\s+IDLE\s+UNLOADS\s+WHERE$/m);
    // The default model loads at start and unloads after the default keep-alive (5 minutes) idle.
    expect(ps.stdout).toMatch(new RegExp(`^smollm2-135m\\s+llama-cpp\\s+\\d+ MiB\\s+${context}\\s+1\\s+\\S+\\s+in \\d\\S*\\s+31 layers on the CPU, KV cache \\d+ MiB in RAM, context ${context} × 1$`, "m"));
  });

  it("--gpu-layers 0 runs the model on the CPU, whatever GPU the machine has", async () => {
    const line = await startupLine(["--gpu-layers", "0", "--ctx-size", "1024"]);
    // A GPU build may still keep compute buffers in VRAM (node-llama-cpp's estimate then names both memories).
    expect(line).toMatch(/^model smollm2-135m \(default\): 31 layers on the CPU, KV cache [^,]*\d+ MiB in RAM, context 1024 × 1, file 94 MiB/);
  });

  it("answers a context far beyond memory with one line naming the memory needed and free, and exits non-zero", async () => {
    const result = await runKilnCli(makeModelHome(), ["serve", "--port", "0", "--threads", "1", "--ctx-size", "1048576", "--parallel", "32"]);
    expect(result.code).not.toBe(0);
    const errors = kilnLines(result.stderr).filter((line) => !line.startsWith("kiln: warning:"));
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatch(/^kiln: cannot create a context of 32 × 1048576 tokens for smollm2-135m: it needs [\d.]+ [GT]iB of V?RAM, [\d.]+ [MGT]iB free \(of [\d.]+ [MGT]iB\); ask for a smaller context or fewer parallel sequences$/);
    expect(result.stderr).not.toMatch(/^\s+at /m);
  });
});

describe("kiln run --gpu", () => {
  const home = makeModelHome();

  it("--gpu none generates on the CPU", async () => {
    const result = await kilnRun(home, ["--gpu", "none", "--threads", "1", "--max-tokens", "3", "--temperature", "0", "Name a colour."]);
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(result.stdout.trim().length).toBeGreaterThan(0);
  });

  it.skipIf(usable.includes("cuda"))("--gpu cuda on a machine without CUDA is one clear error, not a fallback to the CPU", async () => {
    const result = await kilnRun(home, ["--gpu", "cuda", "--max-tokens", "3", "Hi"]);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe("");
    expect(result.stderr).toMatch(/^kiln: CUDA is not available on this machine: no NVIDIA driver with the CUDA runtime was found \(.*\); llama\.cpp can use .+ here\n$/);
  });

  // A server or container without a GPU that has the Vulkan loader (libvulkan1) installed, as CI has: no driver.
  const noVulkanDriver = { VK_ICD_FILENAMES: "/nonexistent/vulkan/icd.json" };

  it.skipIf(!hasVulkanLoader())("with a Vulkan loader but no driver, runs on the CPU and prints only the reply", async () => {
    const result = await kilnRun(home, ["--threads", "1", "--max-tokens", "3", "--temperature", "0", "Name a colour."], noVulkanDriver);
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(result.stdout.trim().length).toBeGreaterThan(0);
  });

  it.skipIf(!hasVulkanLoader())("--gpu vulkan with a Vulkan loader but no driver is one clear error", async () => {
    const result = await kilnRun(home, ["--gpu", "vulkan", "--max-tokens", "3", "Hi"], noVulkanDriver);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe("");
    expect(result.stderr).toMatch(/^kiln: Vulkan is not available on this machine: a Vulkan loader is installed but no Vulkan driver \(.*\); llama\.cpp can use .+ here\n$/);
  });

  // A virtual machine or CI runner with Mesa's Vulkan drivers installed and no GPU: the only Vulkan device is Mesa's
  // software renderer (lavapipe, from scripts/lavapipe.sh), which llama.cpp does not use.
  const softwareVulkanOnly = { VK_ICD_FILENAMES: lavapipeIcd() ?? "" };
  const noSoftwareVulkan = !hasVulkanLoader() || !lavapipeIcd() || hasGpuDeviceNode();

  it.skipIf(noSoftwareVulkan)("--gpu vulkan where Vulkan has only a software renderer is one clear error", async () => {
    const result = await kilnRun(home, ["--gpu", "vulkan", "--max-tokens", "3", "Hi"], softwareVulkanOnly);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe("");
    expect(result.stderr).toMatch(/^kiln: Vulkan is not available on this machine: no GPU device was found \(.*\), so the only Vulkan devices are software renderers, which llama\.cpp does not use; llama\.cpp can use .+ here\n$/);
  });

  it.skipIf(noSoftwareVulkan)("--gpu auto where Vulkan has only a software renderer runs on the CPU and prints only the reply", async () => {
    const result = await kilnRun(home, ["--threads", "1", "--max-tokens", "3", "--temperature", "0", "Name a colour."], softwareVulkanOnly);
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(result.stdout.trim().length).toBeGreaterThan(0);
    const info = await runKilnCli(home, ["info", "--json"], softwareVulkanOnly);
    expect(info.code, info.stderr).toBe(0);
    expect((JSON.parse(info.stdout) as { usableBackends: string[] }).usableBackends).not.toContain("vulkan");
  });

  it("refuses --gpu and --gpu-layers values it does not know", async () => {
    const gpu = await kilnRun(home, ["--gpu", "rocm", "Hi"]);
    expect(gpu.code).toBe(1);
    expect(gpu.stderr).toMatch(/--gpu .*rocm.* is invalid/);
    const layers = await kilnRun(home, ["--gpu-layers", "most", "Hi"]);
    expect(layers.code).toBe(1);
    expect(layers.stderr).toMatch(/expected auto, max or a number of layers/);
  });
});

describe("kiln info", () => {
  it("--json lists llama.cpp's devices with their memory and the GPU backend in use", async () => {
    const result = await runKilnCli(makeModelHome(), ["info", "--json"]);
    expect(result.code, result.stderr).toBe(0);
    const facts = JSON.parse(result.stdout) as { gpu: string; devices: Record<string, unknown>[]; usableBackends: string[] };
    const [cpu, gpu] = facts.devices;
    expect(cpu).toMatchObject({ kind: "cpu", name: expect.any(String), cores: expect.any(Number), ramTotalBytes: expect.any(Number), ramFreeBytes: expect.any(Number) });
    expect(cpu!.ramTotalBytes as number).toBeGreaterThan(cpu!.ramFreeBytes as number);
    expect(cpu!.ramFreeBytes as number).toBeGreaterThan(0);
    expect(facts.usableBackends).toContain("cpu");
    if (facts.gpu === "none (CPU)") {
      expect(facts.devices).toHaveLength(1);
    } else {
      expect(gpu).toMatchObject({ kind: "gpu", backend: facts.gpu, names: expect.any(Array), vramTotalBytes: expect.any(Number), vramFreeBytes: expect.any(Number) });
      expect(gpu!.vramTotalBytes as number).toBeGreaterThan(0);
    }
  });

  it("prints the devices with their memory", async () => {
    const result = await runKilnCli(makeModelHome(), ["info"]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/^devices:\n {2}CPU .+ \(\d+ cores\): RAM [\d.]+ GiB total, [\d.]+ [MG]iB free$/m);
    expect(result.stdout).toMatch(/^gpu\s+\S+/m);
  });
});
