/**
 * Moves a sequence's saved state between two contexts of one model that hold different numbers of sequences.
 * node-llama-cpp gives every sequence its own KV stream, and llama.cpp's sequence state file records the writer's
 * stream count and refuses a reader with another ("n_stream mismatch"), although a one-sequence state is the same
 * cells whatever the count: after the token header come the stream count and, per stream, a cell count and that
 * stream's cells, empty (a zero count) for every stream but the sequence's own; the reader puts the cells into its
 * own sequence's stream whichever stream they came from. So the file is rewritten with the other context's stream
 * count, its one non-empty stream first and empty ones after it. This holds for a plain KV cache (one cache per context):
 * callers use it only for models without sliding-window or recurrent layers, and every check here fails closed.
 */
import { open } from "node:fs/promises";

/** llama.h of the pinned llama.cpp release: LLAMA_STATE_SEQ_MAGIC ('ggsq') and LLAMA_STATE_SEQ_VERSION. */
const MAGIC = 0x67677371;
const VERSION = 3;
const COPY_BYTES = 8 << 20;

/** A context's stream count and the stream of the sequence saved. */
export interface StreamPlace {
  streams: number;
  index: number;
}

/**
 * Rewrites the state file at `path` (saved from a context whose layout is `from`) in place so that a context of
 * `streams` streams loads it; the cells go first, since the reader puts them into its own sequence's stream wherever
 * they are. Only a sequence outside the first stream costs a copy of the file. Throws on anything unexpected.
 */
export async function restreamStateFile(path: string, from: StreamPlace, streams: number): Promise<void> {
  const file = await open(path, "r+");
  try {
    const { size } = await file.stat();
    const head = await readBytes(file, 0, 12);
    if (head.readUInt32LE(0) !== MAGIC || head.readUInt32LE(4) !== VERSION) throw new Error("not a sequence state file of this llama.cpp release");
    const headerBytes = 12 + 4 * head.readUInt32LE(8);
    const saved = (await readBytes(file, headerBytes, 4)).readUInt32LE(0);
    if (saved !== from.streams) throw new Error(`the state has ${saved} streams, not ${from.streams}`);
    const start = headerBytes + 4 + 4 * from.index;
    const end = size - 4 * (from.streams - 1 - from.index);
    if (end <= start) throw new Error("the state file is truncated");
    await expectZeros(file, headerBytes + 4, start);
    await expectZeros(file, end, size);
    if ((await readBytes(file, start, 4)).readUInt32LE(0) === 0) throw new Error("the sequence's stream is empty");
    const count = Buffer.alloc(4);
    count.writeUInt32LE(streams);
    await file.write(count, 0, 4, headerBytes);
    // Shift the cells down over the empty streams before them, chunk by chunk from the front (the copy never overtakes its source).
    const shift = start - (headerBytes + 4);
    for (let offset = start; shift > 0 && offset < end; offset += COPY_BYTES) {
      const bytes = await readBytes(file, offset, Math.min(COPY_BYTES, end - offset));
      await file.write(bytes, 0, bytes.length, offset - shift);
    }
    await file.truncate(end - shift);
    await file.write(Buffer.alloc(4 * (streams - 1)), 0, 4 * (streams - 1), end - shift);
  } finally {
    await file.close();
  }
}

async function readBytes(file: Awaited<ReturnType<typeof open>>, position: number, length: number): Promise<Buffer> {
  const buffer = Buffer.alloc(length);
  const { bytesRead } = await file.read(buffer, 0, length, position);
  if (bytesRead !== length) throw new Error("the state file is truncated");
  return buffer;
}

async function expectZeros(file: Awaited<ReturnType<typeof open>>, from: number, to: number): Promise<void> {
  if (to <= from) return;
  const bytes = await readBytes(file, from, to - from);
  if (bytes.some((byte) => byte !== 0)) throw new Error("another sequence's stream is not empty");
}
