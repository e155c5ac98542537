/**
 * Runs kiln's team commands as a real process against a temp KILN_HOME. Uses `bin/kiln.js` once the build's
 * main.js registers `keys`, else a driver that registers them the same way (see team-cli-driver.mjs).
 */
import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const root = new URL("../../", import.meta.url).pathname;

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** A fresh, empty kiln home. */
export function makeHome(): string {
  return mkdtempSync(join(tmpdir(), "kiln-team-"));
}

/** The entry point to run: the real binary when it has the team commands. */
function entryPoint(): string {
  const main = join(root, "dist/cli/main.js");
  if (!existsSync(join(root, "dist/cli/commands/keys.js"))) throw new Error("build first: npx tsc -p tsconfig.json");
  return readFileSync(main, "utf8").includes("registerKeys") ? join(root, "bin/kiln.js") : join(root, "test/helpers/team-cli-driver.mjs");
}

/** Runs `kiln <args>` with KILN_HOME=home; resolves with the exit code and output (never rejects on exit codes). */
export function runKiln(home: string, args: string[]): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [entryPoint(), ...args], { cwd: root, env: { ...process.env, KILN_HOME: home }, timeout: 60_000 }, (error, stdout, stderr) => {
      if (error && typeof error.code !== "number") return reject(error);
      resolve({ code: error ? Number(error.code) : 0, stdout, stderr });
    });
  });
}
