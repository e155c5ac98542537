/**
 * Runs the built `kiln serve` (bin/kiln.js; build first with `npx tsc -p tsconfig.json`) as a real process on
 * 127.0.0.1 port 0 with a temp KILN_HOME holding the real default model, and reads its base URL from stderr.
 */
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import { realModelPath, testThreads } from "./real-model.js";

const root = new URL("../../", import.meta.url).pathname;
const bin = join(root, "bin", "kiln.js");

/** A running `kiln serve` process. */
export interface ServeProcess {
  child: ChildProcess;
  url: string;
  home: string;
  /** Everything written to stderr so far. */
  stderr(): string;
  /** Resolves when stderr has printed a line matching `pattern`. */
  waitForLog(pattern: RegExp): Promise<string>;
  /** Resolves with the exit code (or the signal's name). */
  exited: Promise<number | string>;
}

/** A temp KILN_HOME whose store links to the real default model and its record. */
export function makeModelHome(): string {
  const home = mkdtempSync(join(tmpdir(), "kiln-serve-"));
  mkdirSync(join(home, "models"));
  const model = realModelPath();
  const record = model.replace(/\.gguf$/, ".json");
  symlinkSync(model, join(home, "models", "smollm2-135m.gguf"));
  if (existsSync(record)) symlinkSync(record, join(home, "models", "smollm2-135m.json"));
  else throw new Error(`no store record next to ${basename(model)} in ${dirname(model)}`);
  return home;
}

/** Starts `kiln serve --port 0 <args>` and resolves once its start-up report is printed (models loaded). */
export async function spawnServe(args: string[], home = makeModelHome(), env: NodeJS.ProcessEnv = {}): Promise<ServeProcess> {
  if (!existsSync(join(root, "dist", "cli", "main.js"))) throw new Error("build first: npx tsc -p tsconfig.json");
  const child = spawn(process.execPath, [bin, "serve", "--port", "0", "--threads", String(testThreads()), ...args], {
    cwd: root,
    env: { ...process.env, KILN_HOME: home, ...env },
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  const waiters: { pattern: RegExp; resolve(line: string): void }[] = [];
  const exited = new Promise<number | string>((resolve) => child.once("exit", (code, signal) => resolve(code ?? signal ?? -1)));
  child.stderr!.setEncoding("utf8").on("data", (chunk: string) => {
    stderr += chunk;
    for (const waiter of [...waiters]) {
      const line = stderr.split("\n").find((l) => waiter.pattern.test(l));
      if (line !== undefined) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve(line);
      }
    }
  });
  const waitForLog = (pattern: RegExp) =>
    new Promise<string>((resolve, reject) => {
      const line = stderr.split("\n").find((l) => pattern.test(l));
      if (line !== undefined) return resolve(line);
      waiters.push({ pattern, resolve });
      void exited.then((code) => reject(new Error(`kiln serve exited (${code}) before printing ${pattern}:\n${stderr}`)));
    });
  // The auth line is the last of the start-up report.
  await waitForLog(/^auth: /);
  const url = /^Anthropic base URL: (http:\/\/\S+)/m.exec(stderr)![1]!;
  return { child, url, home, stderr: () => stderr, waitForLog, exited };
}

/** Runs `kiln <args>` with KILN_HOME=home; resolves with the exit code and stdout. */
export function runKilnCli(home: string, args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [bin, ...args], { cwd: root, env: { ...process.env, KILN_HOME: home, ...env }, timeout: 60_000 }, (error, stdout, stderr) => {
      if (error && typeof error.code !== "number") return reject(error);
      resolve({ code: error ? Number(error.code) : 0, stdout, stderr });
    });
  });
}
