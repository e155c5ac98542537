import { execFile } from "node:child_process";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const root = new URL("../../", import.meta.url).pathname;

/** Runs the child under `node --expose-gc` through vite-node (it imports the TypeScript sources). */
function runChild(): Promise<{ code: number | null; signal: string | null; stdout: string; stderr: string }> {
  const args = ["--expose-gc", join(root, "node_modules/vite-node/vite-node.mjs"), join(root, "test/webgpu/gc-stress-child.ts")];
  return new Promise((resolve) => {
    execFile(process.execPath, args, { cwd: root, timeout: 90_000 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === "number" ? error.code : null) : 0;
      resolve({ code, signal: error?.signal ?? null, stdout, stderr });
    });
  });
}

describe("WebGPU device under forced GC", () => {
  it("survives 20 rounds of dispatches with gc() and ~20 MB of JS garbage between them", async (ctx) => {
    const { code, signal, stdout, stderr } = await runChild();
    if (stdout.includes("no-adapter")) ctx.skip("no WebGPU adapter came up");
    expect({ code, signal, stdout: stdout.trim(), stderr: code === 0 ? "" : stderr }).toEqual({ code: 0, signal: null, stdout: "ok 20", stderr: "" });
  });
});
