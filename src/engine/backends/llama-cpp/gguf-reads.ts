/**
 * Lighter GGUF header reads in node-llama-cpp. Every `loadModel` parses the file's metadata in JavaScript on the event
 * loop, so a model loading on demand must not hold the streams of the models already serving. Two patches:
 *
 * - Turns: once its 4 MB read buffer holds the header, the parse ran in one synchronous piece (the 151,936 tokens,
 *   types and merges of a Qwen vocabulary held the loop 130–210 ms on 2 cores). node-llama-cpp's reader already
 *   accepts a promise from any read, so every READS_PER_TURN-th read here waits for the next turn of the loop first.
 * - Long arrays: node-llama-cpp reads those 450k values only to take the vocabulary's length (GgufInsights,
 *   LlamaModel); llama.cpp reads the vocabulary itself. Building them cost the loop another ~100 ms and the garbage
 *   collector pauses of 20–45 ms while the stream of another model waited (bench/results/2026-11-27-vm-load-stalls.md).
 *   An array longer than MAX_KEPT_ARRAY is now skipped and stands as an empty array of its length.
 *
 * The parser and reader classes are not exported, so they are reached by their files in the package (the module
 * instances node-llama-cpp itself uses). If a later version moves them, nothing is patched and `lightGgufReads`
 * says so (a test checks it).
 */
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { pathToFileURL } from "node:url";

/** About 1 ms of parsing between turns on a 2-core machine (a read is ~0.2 µs; a string is two reads). */
export const READS_PER_TURN = 4096;
/** Arrays longer than this keep only their length (as kiln's own header reader does). */
export const MAX_KEPT_ARRAY = 1024;

/** GGUF value types, as numbered on disk: the fixed-size ones by their size, then string and array. */
const SCALAR_SIZE: Record<number, number> = { 0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8 };
const STRING = 8;
const ARRAY = 9;

type Prototype = Record<PropertyKey, unknown>;
/** node-llama-cpp's read offset: a position its reads advance. */
interface ReadOffset { offset: number; moveBy(amount: number): void }
interface FileReader {
  readUint32(offset: ReadOffset | number): unknown;
  readUint64(offset: ReadOffset | number): unknown;
  /** Reads more of the file when the range is not in `_buffer` yet: a promise then, else undefined. */
  ensureHasByteRange?(offset: number, length: number): unknown;
  /** The file's bytes read so far, from its start. */
  _buffer?: Buffer;
}
type ReadValue = (this: { _fileReader: FileReader }, type: number, offset: unknown) => unknown;
type BufferRead = (this: object, offset: unknown, length: number, reader: unknown) => unknown;

const PATCHED = Symbol.for("kiln.ggufReads");
let attached: Promise<boolean> | undefined;

/** Patches node-llama-cpp's GGUF parse once per process; resolves whether both patches are in. */
export function lightGgufReads(): Promise<boolean> {
  attached ??= attach().catch(() => false);
  return attached;
}

async function distModule<T>(file: string): Promise<T> {
  const dist = dirname(createRequire(import.meta.url).resolve("node-llama-cpp"));
  return (await import(pathToFileURL(join(dist, file)).href)) as T;
}

/** The prototype of node-llama-cpp's GGUF reader (every read of a header goes through its `_withBufferRead`). */
export async function ggufReaderPrototype(): Promise<Prototype | undefined> {
  return (await distModule<{ GgufFileReader?: { prototype: Prototype } }>("gguf/fileReaders/GgufFileReader.js")).GgufFileReader?.prototype;
}

/** The prototype of node-llama-cpp's GGUF parser (every metadata value is read by its `_readGgufValue`). */
export async function ggufParserPrototype(): Promise<Prototype | undefined> {
  return (await distModule<{ GgufV2Parser?: { prototype: Prototype } }>("gguf/parser/GgufV2Parser.js")).GgufV2Parser?.prototype;
}

async function attach(): Promise<boolean> {
  const [reader, parser] = await Promise.all([ggufReaderPrototype(), ggufParserPrototype()]);
  const read = reader?._withBufferRead;
  const readValue = parser?._readGgufValue;
  if (!reader || !parser || typeof read !== "function" || typeof readValue !== "function") return false;
  if (!reader[PATCHED]) {
    reader._withBufferRead = withTurns(read as BufferRead);
    reader[PATCHED] = true;
  }
  if (!parser[PATCHED]) {
    parser._readGgufValue = skippingLongArrays(readValue as ReadValue);
    parser[PATCHED] = true;
  }
  return true;
}

function withTurns(read: BufferRead): BufferRead {
  const reads = new WeakMap<object, number>();
  return function (this: object, offset, length, reader) {
    const count = (reads.get(this) ?? 0) + 1;
    reads.set(this, count);
    if (count % READS_PER_TURN !== 0) return read.call(this, offset, length, reader);
    return new Promise<void>((resolve) => setImmediate(resolve)).then(() => read.call(this, offset, length, reader));
  };
}

/** A value or a promise of it, as node-llama-cpp's reads return: `then` without a turn when there is no promise. */
function then<T>(value: unknown, next: (value: T) => unknown): unknown {
  return value instanceof Promise ? value.then(next) : next(value as T);
}

function skippingLongArrays(readValue: ReadValue): ReadValue {
  return function (type, offset) {
    const at = offset as ReadOffset;
    if (type !== ARRAY || typeof at?.moveBy !== "function") return readValue.call(this, type, offset);
    const file = this._fileReader;
    // Peek at the item type and length (a number offset moves nothing); short arrays are read as before.
    return then<number>(file.readUint32(at.offset), (itemType) => then<bigint>(file.readUint64(at.offset + 4), (count) => {
      const length = Number(count);
      if (length <= MAX_KEPT_ARRAY || (itemType !== STRING && SCALAR_SIZE[itemType] === undefined)) return readValue.call(this, type, offset);
      at.moveBy(12);
      const skipped: unknown[] = [];
      skipped.length = length;
      if (itemType !== STRING) {
        at.moveBy(SCALAR_SIZE[itemType]! * length);
        return skipped;
      }
      return then(skipStrings(file, at, length, 0), () => skipped);
    }));
  };
}

/**
 * Moves past `count` strings by their lengths alone, read straight from the reader's buffer (a reader call per string
 * allocated ~140 bytes each: 42 MB of garbage for a Qwen vocabulary); a promise when more of the file must be read.
 */
function skipStrings(file: FileReader, at: ReadOffset, count: number, from: number): unknown {
  if (typeof file.ensureHasByteRange !== "function" || !Buffer.isBuffer(file._buffer)) return skipStringsByReads(file, at, count, from);
  for (let i = from; i < count;) {
    const buffer: Buffer = file._buffer!;
    const view = new DataView(buffer.buffer, buffer.byteOffset, buffer.byteLength);
    let offset = at.offset;
    while (i < count && offset + 8 <= view.byteLength) {
      const length = view.getUint32(offset, true) + view.getUint32(offset + 4, true) * 2 ** 32;
      if (offset + 8 + length > view.byteLength) break;
      offset += 8 + length;
      i++;
    }
    at.moveBy(offset - at.offset);
    if (i === count) break;
    // The next string is not all in the buffer: read on (node-llama-cpp reads 4 MB ahead), then go on from it.
    const needed = offset + 8 <= view.byteLength ? 8 + view.getUint32(offset, true) + view.getUint32(offset + 4, true) * 2 ** 32 : 8;
    const more = file.ensureHasByteRange(offset, needed);
    if (more instanceof Promise) return more.then(() => skipStrings(file, at, count, i));
    if (file._buffer === buffer) return skipStringsByReads(file, at, count, i);
  }
  return undefined;
}

/** The same through the reader's calls, where its buffer is not reachable. */
function skipStringsByReads(file: FileReader, at: ReadOffset, count: number, from: number): unknown {
  for (let i = from; i < count; i++) {
    const length = file.readUint64(at);
    if (length instanceof Promise) return length.then((bytes: bigint) => (at.moveBy(Number(bytes)), skipStringsByReads(file, at, count, i + 1)));
    at.moveBy(Number(length));
  }
  return undefined;
}
