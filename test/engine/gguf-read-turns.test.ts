import { readGgufFileInfo } from "node-llama-cpp";
import { describe, expect, it } from "vitest";
import { ggufReaderPrototype, READS_PER_TURN, yieldingGgufReads } from "../../src/engine/backends/llama-cpp/gguf-read-turns.js";
import { realModelPath } from "../helpers/real-model.js";

type Read = (this: unknown, ...args: unknown[]) => unknown;

/** Counts node-llama-cpp's GGUF reads and reports the most made in one turn of the event loop while `work` runs. */
async function mostReadsInOneTurn(work: () => Promise<unknown>): Promise<number> {
  const prototype = (await ggufReaderPrototype())!;
  const read = prototype._withBufferRead as Read;
  let reads = 0;
  let most = 0;
  prototype._withBufferRead = function (this: unknown, ...args: unknown[]) {
    reads++;
    return read.apply(this, args);
  };
  let running = true;
  const turn = (): void => {
    most = Math.max(most, reads);
    reads = 0;
    if (running) setImmediate(turn);
  };
  setImmediate(turn);
  try {
    await work();
  } finally {
    running = false;
    prototype._withBufferRead = read;
  }
  return Math.max(most, reads);
}

describe("node-llama-cpp's GGUF reads", () => {
  it("let the event loop turn every few thousand reads while a real vocabulary is parsed", async () => {
    const path = realModelPath();
    let unpatched: unknown;
    // Without the patch the header is parsed in one piece once the file's first 4 MB are in: every token in one turn.
    const before = await mostReadsInOneTurn(async () => (unpatched = await readGgufFileInfo(path, { logWarnings: false })));
    expect(await yieldingGgufReads()).toBe(true);
    let info: Awaited<ReturnType<typeof readGgufFileInfo>> | undefined;
    const after = await mostReadsInOneTurn(async () => (info = await readGgufFileInfo(path, { logWarnings: false })));
    const vocabulary = info?.metadata.tokenizer?.ggml?.tokens?.length ?? 0;
    expect(vocabulary).toBeGreaterThan(40_000);
    expect(before).toBeGreaterThan(2 * vocabulary);
    expect(after).toBeLessThanOrEqual(READS_PER_TURN);
    // The parse is the same: every key and tensor read as before.
    expect(info).toEqual(unpatched);
  });
});
