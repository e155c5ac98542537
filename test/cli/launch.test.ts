/**
 * `kiln launch` as users run it (the built CLI as a child process, a temp KILN_HOME): every refusal is one line and a
 * hint, before any agent starts — an unknown agent, an agent not on PATH, a model that cannot call tools, and a
 * running kiln whose context is too small for the agent (a real server on a loopback port with the real model).
 */
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../helpers/server.js";
import { writeTinyGguf } from "../helpers/tiny-gguf.js";

const root = resolve(import.meta.dirname, "../..");
const execFileAsync = promisify(execFile);
const home = mkdtempSync(join(tmpdir(), "kiln-launch-home-"));
/** PATH with the pinned Claude Code (node_modules/.bin) and the system tools, without any global agents. */
const PATH = [join(root, "node_modules", ".bin"), "/usr/bin", "/bin"].join(delimiter);
let server: TestServer;

function kiln(args: string[]): Promise<{ code: number; stderr: string }> {
  return new Promise((done) => {
    execFile("node", [join(root, "bin/kiln.js"), ...args], { env: { PATH, HOME: home, KILN_HOME: home } }, (error, _stdout, stderr) => {
      done({ code: error ? Number(error.code ?? 1) : 0, stderr });
    });
  });
}

/** The error line and the hint line: exactly two lines, `kiln: …` then `hint: …`. */
function expectOneLineError(result: { code: number; stderr: string }, message: RegExp, hint: RegExp): void {
  expect(result.code).toBe(1);
  const lines = result.stderr.trim().split("\n");
  expect(lines).toHaveLength(2);
  expect(lines[0]).toMatch(/^kiln: /);
  expect(lines[0]).toMatch(message);
  expect(lines[1]).toMatch(/^hint: /);
  expect(lines[1]).toMatch(hint);
}

beforeAll(async () => {
  server = await startTestServer({ ctxSize: 2048, parallel: 1 });
});

afterAll(async () => {
  await server?.close();
});

describe("kiln launch refusals", { timeout: 60_000 }, () => {
  it("names the agents when the agent is unknown", async () => {
    expectOneLineError(await kiln(["launch", "vim"]), /unknown agent "vim"/, /claude, codex, opencode, qwen, aider/);
  });

  it("says how to install an agent that is not on PATH", async () => {
    expectOneLineError(await kiln(["launch", "codex"]), /Codex CLI is not installed/, /npm install -g @openai\/codex/);
    expectOneLineError(await kiln(["launch", "qwen"]), /Qwen Code is not installed/, /npm install -g @qwen-code\/qwen-code/);
  });

  it("refuses a model whose chat template has no tools for Claude Code, before starting a server", async () => {
    const model = await writeTinyGguf(join(home, "tiny.gguf"));
    expectOneLineError(await kiln(["launch", "claude", "--url", "http://127.0.0.1:9", "--model", model]), /cannot call tools/, /--model/);
  });

  it("refuses a running kiln whose context cannot hold Claude Code's prompt", async () => {
    expectOneLineError(await kiln(["launch", "claude", "--url", server.url]), /2048-token context; Claude Code needs at least 24576/, /longer context/);
  });
});

describe("kiln launch running an agent", { timeout: 60_000 }, () => {
  it("runs the agent in the folder it was started from, with PWD saying so (opencode reads its project from PWD)", async () => {
    // A stand-in agent binary that reports what it was started with: this checks kiln's side of the hand-over only.
    const bin = mkdtempSync(join(tmpdir(), "kiln-launch-bin-"));
    writeFileSync(join(bin, "aider"), "#!/bin/sh\necho \"pwd=$(pwd) PWD=$PWD\"\n", { mode: 0o755 });
    const project = mkdtempSync(join(tmpdir(), "kiln-launch-project-"));
    const wide = await startTestServer({ ctxSize: 8192, parallel: 1 });
    try {
      const { stdout } = await execFileAsync("node", [join(root, "bin/kiln.js"), "launch", "aider", "--url", wide.url], {
        cwd: project, env: { PATH: [bin, PATH].join(delimiter), HOME: home, KILN_HOME: home, PWD: root },
      });
      expect(stdout.trim()).toBe(`pwd=${project} PWD=${project}`);
    } finally {
      await wide.close();
    }
  });
});

