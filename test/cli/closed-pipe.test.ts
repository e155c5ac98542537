/**
 * A reader that closes the pipe before kiln writes (`kiln serve --help | true`, `kiln models list | head -1`): kiln
 * ends quietly with status 0, as other command-line tools do, instead of printing a stack trace. The built binary as
 * a child process (`npm test` builds first).
 */
import { execFile } from "node:child_process";
import { resolve } from "node:path";
import { promisify } from "node:util";
import { expect, it } from "vitest";

const root = resolve(import.meta.dirname, "../..");

it("ends with status 0 and nothing on stderr when the reader has already gone", async () => {
  // `true` exits without reading, long before node has started: kiln's first write meets a closed pipe.
  const { stdout, stderr } = await promisify(execFile)("bash", ["-c", `node bin/kiln.js serve --help | true; echo "status \${PIPESTATUS[0]}"`], { cwd: root });
  expect(stderr).toBe("");
  expect(stdout.trim()).toBe("status 0");
});
