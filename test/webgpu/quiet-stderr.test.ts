/**
 * A WebGPU run prints only kiln's own output: what Dawn prints while enumerating adapters (native code writing
 * straight to descriptor 2: limits it clamps, a Vulkan loader that finds no driver) goes to `kiln info --backend
 * webgpu` instead. The commands run through a shell with stderr on a pipe or a file, as a user's `kiln run … 2>&1 |
 * …` does.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { writeTinyGguf } from "../helpers/tiny-gguf.js";
import { webGpuAvailable } from "../helpers/webgpu.js";

const available = await webGpuAvailable();
const root = new URL("../../", import.meta.url).pathname;
const dir = mkdtempSync(join(tmpdir(), "kiln-webgpu-quiet-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Runs a shell command line in the repository with KILN_HOME in the temporary folder; resolves with its stdout. */
function shell(line: string): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile("sh", ["-c", line], { cwd: root, env: { ...process.env, KILN_HOME: dir, NODE: process.execPath }, timeout: 60_000 }, (error, stdout, stderr) =>
      error ? reject(new Error(`${line}: ${error.message}\n${stderr}`)) : resolve(stdout));
  });
}

describe.skipIf(!available)("a WebGPU run's stderr", () => {
  it("kiln run --backend webgpu 2>&1 | cat shows the reply and no Dawn notice", async () => {
    const model = await writeTinyGguf(join(dir, "tiny.gguf"), 4);
    const run = `"$NODE" bin/kiln.js run --backend webgpu --model ${model} --max-tokens 4 --temperature 0`;
    const merged = await shell(`${run} --json hello </dev/null 2>&1 | cat`);
    expect(merged).not.toMatch(/artificially reduced|Warning/);
    // Every line is one of kiln's NDJSON events: nothing else reached the pipe.
    const events = merged.trimEnd().split("\n").map((line) => JSON.parse(line) as { type: string });
    expect(events.at(-1)?.type).toBe("finish");
    await shell(`${run} hello </dev/null >/dev/null 2>${join(dir, "stderr.txt")}`);
    expect(readFileSync(join(dir, "stderr.txt"), "utf8")).toBe("");
  });

  it("kiln's own errors still reach stderr after the device opened", async () => {
    const model = await writeTinyGguf(join(dir, "tiny.gguf"), 4);
    const prompt = Array.from({ length: 400 }, (_, i) => i).join(" ");
    // The prompt overflows the context: the error is found after the model (and the device) were loaded.
    const merged = await shell(`"$NODE" bin/kiln.js run --backend webgpu --model ${model} --ctx-size 256 "${prompt}" </dev/null 2>&1 | cat`);
    expect(merged).toMatch(/^kiln: prompt is too long: [^\n]* > 256 maximum\n$/);
  });

  it("kiln info --backend webgpu keeps Dawn's notices", async () => {
    const info = JSON.parse(await shell(`"$NODE" bin/kiln.js info --backend webgpu --json 2>&1 | cat`)) as { notices: string[] };
    expect(Array.isArray(info.notices)).toBe(true);
    for (const notice of info.notices) expect(notice).toMatch(/^Warning: /);
  });

  // A machine with no Vulkan driver (a server without a GPU, where libvulkan1 may still be installed, or not): Dawn's
  // Vulkan backend complains while kiln tries it first, then the software adapter serves.
  const noVulkanDriver = "KILN_WEBGPU_BACKEND=vulkan,opengles VK_ICD_FILENAMES=/nonexistent/icd.json";

  it("a Vulkan backend with no driver costs the run no line of output", async () => {
    const model = await writeTinyGguf(join(dir, "tiny.gguf"), 4);
    const merged = await shell(`${noVulkanDriver} "$NODE" bin/kiln.js run --backend webgpu --model ${model} --max-tokens 4 --temperature 0 --json hello </dev/null 2>&1 | cat`);
    expect(merged).not.toMatch(/Warning|vulkan/i);
    const events = merged.trimEnd().split("\n").map((line) => JSON.parse(line) as { type: string });
    expect(events.at(-1)?.type).toBe("finish");
    const info = JSON.parse(await shell(`${noVulkanDriver} "$NODE" bin/kiln.js info --backend webgpu --json 2>&1 | cat`)) as { api: string; notices: string[] };
    expect(info.api).toBe("opengles");
    expect(info.notices.join("\n")).toMatch(/vulkan|vkCreateInstance/i);
  });
});
