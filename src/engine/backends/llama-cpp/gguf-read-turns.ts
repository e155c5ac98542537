/**
 * Lets the event loop turn while node-llama-cpp reads a GGUF header. Every `loadModel` parses the file's metadata in
 * JavaScript, and once its 4 MB read buffer holds the header the parse runs in one synchronous piece: the 151,936
 * tokens, types and merges of a Qwen vocabulary held the loop 130–210 ms on 2 cores, so loading a model on demand
 * stalled every stream of the models already serving by several steps. node-llama-cpp's reader already accepts a
 * promise from any read (it returns one whenever it must read more of the file), so every READS_PER_TURN-th read
 * here waits for the next turn of the loop first; the parse does the same work in slices of a few milliseconds.
 *
 * The reader class is not exported, so it is reached by its file in the package (the module instance node-llama-cpp
 * itself uses). If a later version moves it, nothing is patched and `yieldingGgufReads` says so (a test checks it).
 */
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { pathToFileURL } from "node:url";

/** About 1 ms of parsing between turns on a 2-core machine (a read is ~0.2 µs; a string is two reads). */
export const READS_PER_TURN = 4096;

type BufferRead = (this: object, offset: unknown, length: number, reader: unknown) => unknown;

const PATCHED = Symbol.for("kiln.ggufReadTurns");
let attached: Promise<boolean> | undefined;

/** Patches node-llama-cpp's GGUF reader once per process; resolves whether the reads now yield. */
export function yieldingGgufReads(): Promise<boolean> {
  attached ??= attach().catch(() => false);
  return attached;
}

/** The prototype of node-llama-cpp's GGUF reader (every read of a header goes through its `_withBufferRead`). */
export async function ggufReaderPrototype(): Promise<Record<PropertyKey, unknown> | undefined> {
  const dist = dirname(createRequire(import.meta.url).resolve("node-llama-cpp"));
  const module = (await import(pathToFileURL(join(dist, "gguf/fileReaders/GgufFileReader.js")).href)) as { GgufFileReader?: { prototype: Record<PropertyKey, unknown> } };
  return module.GgufFileReader?.prototype;
}

async function attach(): Promise<boolean> {
  const prototype = await ggufReaderPrototype();
  const read = prototype?._withBufferRead;
  if (!prototype || typeof read !== "function") return false;
  if (prototype[PATCHED]) return true;
  const reads = new WeakMap<object, number>();
  prototype._withBufferRead = function (this: object, offset: unknown, length: number, reader: unknown): unknown {
    const count = (reads.get(this) ?? 0) + 1;
    reads.set(this, count);
    if (count % READS_PER_TURN !== 0) return (read as BufferRead).call(this, offset, length, reader);
    return new Promise<void>((resolve) => setImmediate(resolve)).then(() => (read as BufferRead).call(this, offset, length, reader));
  };
  prototype[PATCHED] = true;
  return true;
}
