import { readGgufFileInfo } from "node-llama-cpp";
import { beforeAll, describe, expect, it } from "vitest";
import { ggufReaderPrototype, lightGgufReads, MAX_KEPT_ARRAY, READS_PER_TURN } from "../../src/engine/backends/llama-cpp/gguf-reads.js";
import { readGgufHeader } from "../../src/gguf/read-gguf-header.js";
import { coderModelPath, realModelPath } from "../helpers/real-model.js";

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

/** The value at a dotted metadata key of node-llama-cpp's nested metadata. */
function at(metadata: unknown, key: string): unknown {
  return key.split(".").reduce<unknown>((value, part) => (value as Record<string, unknown> | undefined)?.[part], metadata);
}

const readInfo = (path: string) => readGgufFileInfo(path, { logWarnings: false });
type GgufInfo = Awaited<ReturnType<typeof readInfo>>;

// Both files are parsed once without the patch, before it is made (it stays for the process).
const coder = coderModelPath();
let unpatched: GgufInfo;
let unpatchedCoder: GgufInfo | undefined;
let turnsBefore = 0;
beforeAll(async () => {
  // Without the patch the header is parsed in one piece once the file's first 4 MB are in: every token in one turn.
  turnsBefore = await mostReadsInOneTurn(async () => (unpatched = await readInfo(realModelPath())));
  if (coder) unpatchedCoder = await readInfo(coder);
  expect(await lightGgufReads()).toBe(true);
});

/** The long arrays (kiln's own reader names them) keep their lengths and lose their items; the rest is the same. */
async function expectOnlyLongArraysSkipped(path: string, unpatched: GgufInfo, patched: GgufInfo): Promise<void> {
  const long = Object.entries((await readGgufHeader(path)).metadata).filter(([, value]) => !Array.isArray(value) && typeof value === "object");
  expect(long.map(([key]) => key)).toContain("tokenizer.ggml.tokens");
  const stripped = structuredClone(unpatched);
  for (const [key, value] of long) {
    const skipped = at(patched.metadata, key) as unknown[];
    expect(skipped.length).toBe((value as { length: number }).length);
    expect(skipped.length).toBeGreaterThan(MAX_KEPT_ARRAY);
    expect(Object.keys(skipped)).toEqual([]);
    const parts = key.split(".");
    const holder = at(stripped.metadata, parts.slice(0, -1).join(".")) as Record<string, unknown>;
    holder[parts.at(-1)!] = skipped;
  }
  expect(patched).toEqual(stripped);
}

describe("node-llama-cpp's GGUF reads", () => {
  it("let the event loop turn every few thousand reads and skip the long arrays, keeping their lengths", async () => {
    let patched: GgufInfo | undefined;
    const turnsAfter = await mostReadsInOneTurn(async () => (patched = await readInfo(realModelPath())));
    const vocabulary = unpatched.metadata.tokenizer?.ggml?.tokens?.length ?? 0;
    expect(vocabulary).toBeGreaterThan(40_000);
    expect(turnsBefore).toBeGreaterThan(2 * vocabulary);
    expect(turnsAfter).toBeLessThanOrEqual(READS_PER_TURN);
    await expectOnlyLongArraysSkipped(realModelPath(), unpatched, patched!);
  });

  // Its 6 MB header is longer than node-llama-cpp's first read of the file: the skip goes on across its later reads.
  it.skipIf(!coder)("skip a Qwen vocabulary whose header spans several reads of the file", async () => {
    expect(unpatchedCoder!.metadata.tokenizer?.ggml?.tokens?.length).toBe(151_936);
    await expectOnlyLongArraysSkipped(coder!, unpatchedCoder!, await readInfo(coder!));
  });
});
