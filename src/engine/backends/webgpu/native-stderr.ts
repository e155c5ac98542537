/**
 * Captures what native code writes to the process's stderr (file descriptor 2) during one synchronous call.
 *
 * Dawn prints notices with fprintf while it enumerates adapters, inside requestAdapter's synchronous part (limits it
 * clamps: "maxDynamicUniformBuffersPerPipelineLayout artificially reduced from 90 to 16 …"; "vkCreateInstance: Found
 * no drivers!" where a Vulkan loader has no driver). They are not errors, no Dawn API routes them, and they would land in the output of `kiln run … 2>&1`. Node has no dup2, so
 * the descriptor is swapped the POSIX way: close 2, and the next open takes the lowest free number, which is 2.
 * The original stderr is reopened through /proc/self/fd (Linux), and restored the same way. Where that cannot be
 * done (no /proc, stderr closed or a socket) the call simply runs uncaptured. Close and open follow each other with
 * nothing between them in this thread.
 */
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const STDERR = 2;

/** Runs `call` with fd 2 pointed at a temporary file; returns its result and what was written there. */
export function captureNativeStderr<T>(call: () => T): { result: T; captured: string } {
  let saved: number;
  try {
    saved = openSync(`/proc/self/fd/${STDERR}`, "a");
  } catch {
    return { result: call(), captured: "" };
  }
  const dir = mkdtempSync(join(tmpdir(), "kiln-dawn-"));
  const file = join(dir, "stderr.txt");
  let result: T;
  // Descriptors below 2 may be free too (a closed stdin): they are filled and held until stderr is back.
  const fillers: number[] = [];
  try {
    closeSync(STDERR);
    try {
      let capture = openSync(file, "w");
      while (capture < STDERR) {
        fillers.push(capture);
        capture = openSync(file, "a");
      }
      try {
        result = call();
      } finally {
        closeSync(capture);
      }
    } finally {
      // 2 is the lowest free descriptor again: reopening the saved stderr puts it back there.
      openSync(`/proc/self/fd/${saved}`, "a");
      for (const fd of fillers) closeSync(fd);
    }
    return { result, captured: readFileSync(file, "utf8") };
  } finally {
    closeSync(saved);
    rmSync(dir, { recursive: true, force: true });
  }
}
