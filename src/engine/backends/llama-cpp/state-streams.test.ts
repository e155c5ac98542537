import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { restreamStateFile } from "./state-streams.js";

let folder: string;
beforeAll(async () => { folder = await mkdtemp(join(tmpdir(), "kiln-restream-")); });
afterAll(async () => { await rm(folder, { recursive: true, force: true }); });

/** A sequence state file: header (magic 'ggsq', version 3, two tokens), the stream count, then u32 words. */
function stateFile(streams: number, words: number[]): Buffer {
  return Buffer.from(Uint32Array.from([0x67677371, 3, 2, 11, 12, streams, ...words]).buffer);
}

/** One stream's cells: a cell count and some bytes standing for the cells. */
const cells = [5, 0xaaaa, 0xbbbb, 0];

async function restreamed(input: Buffer, from: { streams: number; index: number }, streams: number): Promise<Buffer> {
  const path = join(folder, `${Math.random()}.state`);
  await writeFile(path, input);
  await restreamStateFile(path, from, streams);
  return readFile(path);
}

describe("restreamStateFile", () => {
  it("moves a one-stream state to a context of three streams, its cells first", async () => {
    expect(await restreamed(stateFile(1, cells), { streams: 1, index: 0 }, 3)).toEqual(stateFile(3, [...cells, 0, 0]));
  });

  it("moves the second of three streams to a one-stream context", async () => {
    expect(await restreamed(stateFile(3, [0, ...cells, 0]), { streams: 3, index: 1 }, 1)).toEqual(stateFile(1, cells));
  });

  it("moves the last of four streams to a context of two", async () => {
    expect(await restreamed(stateFile(4, [0, 0, 0, ...cells]), { streams: 4, index: 3 }, 2)).toEqual(stateFile(2, [...cells, 0]));
  });

  it("refuses another file, another stream count, a second non-empty stream and an empty sequence", async () => {
    const other = stateFile(1, cells);
    other.writeUInt32LE(0x67676a74, 0);
    await expect(restreamed(other, { streams: 1, index: 0 }, 2)).rejects.toThrow(/not a sequence state file/);
    await expect(restreamed(stateFile(2, [...cells, 0]), { streams: 3, index: 0 }, 1)).rejects.toThrow(/2 streams, not 3/);
    await expect(restreamed(stateFile(2, [...cells, 7]), { streams: 2, index: 0 }, 1)).rejects.toThrow(/not empty/);
    await expect(restreamed(stateFile(2, [0, 0]), { streams: 2, index: 0 }, 1)).rejects.toThrow(/empty/);
  });
});
