/**
 * The remembered binary checks, on Linux: node-llama-cpp's own test of its CPU binary (a real child process) runs once
 * and is then answered from the record; a stale record, a failed test and a GPU binary's test are never answered
 * from it. Real forks are counted by a wrapper installed under kiln's stand-in.
 */
import childProcess, { type ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { syncBuiltinESMExports } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { getLlama, LlamaLogLevel } from "node-llama-cpp";
import { afterAll, afterEach, beforeEach, describe, expect, it } from "vitest";
import { withRememberedBinaryChecks } from "./binary-checks.js";
import { realModelPath } from "../../../test/helpers/real-model.js";

const dir = mkdtempSync(join(tmpdir(), "kiln-binary-checks-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The module paths forked for real while a test runs. */
let forked: string[] = [];
const original = childProcess.fork;
beforeEach(() => {
  forked = [];
  childProcess.fork = function counting(this: unknown, ...args: Parameters<typeof original>) {
    forked.push(String(args[0]));
    return original.apply(this, args);
  } as typeof original;
  syncBuiltinESMExports();
});
afterEach(() => {
  childProcess.fork = original;
  syncBuiltinESMExports();
});

/** A cache folder of its own for one test. */
const cacheFolder = (name: string): string => join(dir, name);
const recordOf = (folder: string): string => join(folder, "llama-binaries.json");
const recorded = (folder: string): string[] => (JSON.parse(readFileSync(recordOf(folder), "utf8")) as { passed: string[] }).passed;

describe.skipIf(process.platform !== "linux")("remembered binary checks", () => {
  const openCpu = () => getLlama({ build: "never", gpu: false, logLevel: LlamaLogLevel.error });

  it("tests node-llama-cpp's CPU binary once, then opens it without the test process", async () => {
    const folder = cacheFolder("real");
    const first = await withRememberedBinaryChecks(folder, openCpu);
    expect(first.gpu).toBe(false);
    await first.dispose();
    expect(forked.filter((path) => path.endsWith("testBindingBinary.js"))).toHaveLength(1);
    expect(recorded(folder)).toHaveLength(1);

    forked = [];
    const second = await withRememberedBinaryChecks(folder, openCpu);
    expect(second.gpu).toBe(false);
    await second.dispose();
    expect(forked).toEqual([]);
    // The real fork is back once llama.cpp is open.
    expect(childProcess.fork.name).toBe("counting");
  });

  it("tests again when the record holds another binary or machine", async () => {
    const folder = cacheFolder("stale");
    mkdirSync(folder);
    writeFileSync(recordOf(folder), JSON.stringify({ passed: ["0".repeat(64)] }));
    const llama = await withRememberedBinaryChecks(folder, openCpu);
    await llama.dispose();
    expect(forked.filter((path) => path.endsWith("testBindingBinary.js"))).toHaveLength(1);
    expect(recorded(folder)).toHaveLength(2);
  });

  // A stand-in for node-llama-cpp's test module (same file name), in a real child process: it passes or fails.
  function fakeTestModule(name: string, passes: boolean): string {
    const path = join(dir, name, "testBindingBinary.js");
    mkdirSync(join(dir, name), { recursive: true });
    writeFileSync(path, `process.on("message", (m) => {
      if (m.type === "start") ${passes ? 'process.send({ type: "loaded" })' : "process.exit(1)"};
      else if (m.type === "test") process.send({ type: "done" });
      else if (m.type === "exit") process.exit(0);
    });
    process.send({ type: "ready" });\n`);
    return path;
  }

  /** Drives a test process as node-llama-cpp does; resolves its exit code and the messages it answered. */
  function runTest(modulePath: string, gpu: unknown): Promise<{ code: number | null; answers: string[] }> {
    return new Promise((resolve) => {
      const answers: string[] = [];
      const start = { type: "start", bindingBinaryPath: process.execPath, gpu };
      const child: ChildProcess = childProcess.fork(modulePath, [], { stdio: ["ignore", "ignore", "ignore", "ipc"] });
      child.on("message", (message: { type: string }) => {
        answers.push(message.type);
        if (message.type === "ready") child.send(start);
        else if (message.type === "loaded") child.send({ ...start, type: "test" });
        else if (message.type === "done") child.send({ type: "exit" });
      });
      child.on("exit", (code) => resolve({ code, answers }));
    });
  }

  it("records a binary whose test passed, answers it from then on, and never records a failed test", async () => {
    const folder = cacheFolder("fake");
    const failing = fakeTestModule("failing", false);
    expect(await withRememberedBinaryChecks(folder, () => runTest(failing, false))).toEqual({ code: 1, answers: ["ready"] });
    expect(forked).toEqual([failing]);
    expect(() => readFileSync(recordOf(folder))).toThrow();

    const passing = fakeTestModule("passing", true);
    expect(await withRememberedBinaryChecks(folder, () => runTest(passing, false))).toEqual({ code: 0, answers: ["ready", "loaded", "done"] });
    expect(recorded(folder)).toHaveLength(1);

    forked = [];
    // The binary (here Node's own executable) is in the record: the failing module is never run.
    expect(await withRememberedBinaryChecks(folder, () => runTest(failing, false))).toEqual({ code: 0, answers: ["ready", "loaded", "done"] });
    expect(forked).toEqual([]);
  });

  it("always runs a GPU binary's test", async () => {
    const folder = cacheFolder("gpu");
    const passing = fakeTestModule("passing-gpu", true);
    for (let i = 0; i < 2; i++) {
      expect(await withRememberedBinaryChecks(folder, () => runTest(passing, "vulkan"))).toEqual({ code: 0, answers: ["ready", "loaded", "done"] });
    }
    expect(forked).toEqual([passing, passing]);
    expect(() => readFileSync(recordOf(folder))).toThrow();
  });

  it("serves the prompt threads' workers too (the built module): a worker's test is recorded, and the process then skips its own", async () => {
    const built = new URL("../../../dist/engine/text/prompt-thread.js", import.meta.url);
    const { PromptThread } = await import(built.href) as typeof import("./prompt-thread.js");
    const folder = cacheFolder("worker");
    const thread = new PromptThread(realModelPath(), folder);
    await thread.warm();
    expect(await thread.tokenize(["Hello"])).toHaveLength(1);
    await thread.dispose();
    expect(recorded(folder)).toHaveLength(1);

    const llama = await withRememberedBinaryChecks(folder, openCpu);
    await llama.dispose();
    expect(forked).toEqual([]);
  });

  it("leaves every other fork alone", async () => {
    const other = join(dir, "other.js");
    writeFileSync(other, "process.exit(3);\n");
    const code = await withRememberedBinaryChecks(cacheFolder("other"), () => new Promise((resolve) => {
      childProcess.fork(other, [], { stdio: "ignore" }).on("exit", resolve);
    }));
    expect(code).toBe(3);
    expect(forked).toEqual([other]);
  });
});
