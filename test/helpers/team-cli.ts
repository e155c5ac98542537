/** Runs kiln's commands as a real process (`bin/kiln.js`, the build) against a temp KILN_HOME. */
import { execFile } from "node:child_process";
import { existsSync, mkdtempSync } from "node:fs";
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

/** The real binary, once built. */
function entryPoint(): string {
  if (!existsSync(join(root, "dist/cli/commands/keys.js"))) throw new Error("build first: npx tsc -p tsconfig.json");
  return join(root, "bin/kiln.js");
}

/**
 * Runs `kiln <args>` with KILN_HOME=home, without holding the caller's event loop; resolves with the exit code and
 * output (never rejects on exit codes). Standard input is closed at once: `kiln run` reads a piped one to its end.
 */
export function runKiln(home: string, args: string[]): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = execFile(process.execPath, [entryPoint(), ...args], { cwd: root, env: { ...process.env, KILN_HOME: home }, timeout: 60_000 }, (error, stdout, stderr) => {
      if (error && typeof error.code !== "number") return reject(error);
      resolve({ code: error ? Number(error.code) : 0, stdout, stderr });
    });
    child.stdin?.end();
  });
}

/** Creates a stored key through the real CLI (`kiln keys create …`); throws with its error output when that fails. */
export async function createStoredKey(home: string, args: string[]): Promise<string> {
  const result = await runKiln(home, ["keys", "create", ...args]);
  if (result.code !== 0) throw new Error(`kiln keys create exited with ${result.code}: ${result.stderr}`);
  return result.stdout.trim();
}
