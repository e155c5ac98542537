/**
 * A small reader for the GGUF header: magic, version, key/value metadata and tensor descriptions (names, shapes,
 * types). It never reads tensor data, and it stays pure TypeScript so listing models never loads the native addon.
 * Format: https://github.com/ggml-org/ggml/blob/master/docs/gguf.md
 */
import { open } from "node:fs/promises";

/** The value types of GGUF metadata, as numbered on disk. */
export enum GgufType {
  UINT8 = 0, INT8 = 1, UINT16 = 2, INT16 = 3, UINT32 = 4, INT32 = 5, FLOAT32 = 6, BOOL = 7,
  STRING = 8, ARRAY = 9, UINT64 = 10, INT64 = 11, FLOAT64 = 12,
}

/** An array too long to keep (a vocabulary, merges): only its item type and length are read. */
export interface GgufLongArray {
  itemType: GgufType;
  length: number;
}

/** A metadata value. 64-bit integers become numbers (exact up to 2^53, which covers every real count). */
export type GgufValue = string | number | boolean | GgufValue[] | GgufLongArray;

/** One tensor's description: where it lies, not its data. */
export interface GgufTensorInfo {
  name: string;
  /** Dimensions, innermost first (ggml's ne[0], ne[1], …). */
  dims: number[];
  /** The ggml type number (0 = F32, 1 = F16, 3 = Q4_1, …). */
  type: number;
  /** Offset of the data from the start of the tensor-data section. */
  offset: number;
}

/** Everything before the tensor data. */
export interface GgufHeader {
  version: number;
  metadata: Record<string, GgufValue>;
  tensors: GgufTensorInfo[];
  /** File offset where the tensor-data section starts (the header's end, aligned to `general.alignment`). */
  dataOffset: number;
}

/** Thrown when bytes are not a GGUF file, or the header is cut short. */
export class GgufFormatError extends Error {
  override name = "GgufFormatError";
}

/** Arrays longer than this keep only their length: vocabularies can hold 100k+ strings. */
const MAX_KEPT_ARRAY = 1024;
const MAGIC = 0x46554747; // "GGUF" read as little-endian uint32
/** The spec's alignment of tensor data when `general.alignment` is absent. */
const DEFAULT_ALIGNMENT = 32;

/** Raised internally when the buffer ends before the header does; the file reader then reads more. */
class NeedMoreBytes extends Error {}

const SCALAR_SIZE: Partial<Record<GgufType, number>> = {
  [GgufType.UINT8]: 1, [GgufType.INT8]: 1, [GgufType.BOOL]: 1, [GgufType.UINT16]: 2, [GgufType.INT16]: 2,
  [GgufType.UINT32]: 4, [GgufType.INT32]: 4, [GgufType.FLOAT32]: 4,
  [GgufType.UINT64]: 8, [GgufType.INT64]: 8, [GgufType.FLOAT64]: 8,
};

/** A bounds-checked little-endian cursor over a buffer. */
class Cursor {
  pos = 0;
  /** Lengths and counts are read through a DataView: ~2 ns a read, where Buffer's readUInt32LE takes ~25. */
  private readonly view: DataView;
  constructor(private readonly buf: Buffer) {
    this.view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  }

  private take(n: number): number {
    if (this.pos + n > this.buf.length) throw new NeedMoreBytes();
    const at = this.pos;
    this.pos += n;
    return at;
  }
  u32(): number { return this.view.getUint32(this.take(4), true); }
  u64(): number {
    const at = this.take(8);
    return this.view.getUint32(at, true) + this.view.getUint32(at + 4, true) * 2 ** 32;
  }
  skip(n: number): void { this.take(n); }
  string(): string {
    const length = this.u64();
    const at = this.take(length);
    return this.buf.toString("utf8", at, at + length);
  }

  scalar(type: GgufType): string | number | boolean {
    const b = this.buf;
    switch (type) {
      case GgufType.UINT8: return b.readUInt8(this.take(1));
      case GgufType.INT8: return b.readInt8(this.take(1));
      case GgufType.BOOL: return b.readUInt8(this.take(1)) !== 0;
      case GgufType.UINT16: return b.readUInt16LE(this.take(2));
      case GgufType.INT16: return b.readInt16LE(this.take(2));
      case GgufType.UINT32: return b.readUInt32LE(this.take(4));
      case GgufType.INT32: return b.readInt32LE(this.take(4));
      case GgufType.FLOAT32: return b.readFloatLE(this.take(4));
      case GgufType.UINT64: return Number(b.readBigUInt64LE(this.take(8)));
      case GgufType.INT64: return Number(b.readBigInt64LE(this.take(8)));
      case GgufType.FLOAT64: return b.readDoubleLE(this.take(8));
      case GgufType.STRING: return this.string();
      default: throw new GgufFormatError(`unknown GGUF value type ${type}`);
    }
  }

  value(type: GgufType): GgufValue {
    if (type !== GgufType.ARRAY) return this.scalar(type);
    const itemType = this.u32() as GgufType;
    const length = this.u64();
    if (length <= MAX_KEPT_ARRAY) return Array.from({ length }, () => this.value(itemType));
    this.skipArray(itemType, length);
    return { itemType, length };
  }

  private skipArray(itemType: GgufType, length: number): void {
    const size = SCALAR_SIZE[itemType];
    if (size !== undefined) return this.skip(size * length);
    if (itemType === GgufType.STRING) return this.skipStrings(length);
    for (let i = 0; i < length; i++) this.value(itemType);
  }

  /** A vocabulary's strings, by their lengths alone (a tight loop: a load reads 300k of them on the event loop). */
  private skipStrings(count: number): void {
    const view = this.view;
    const end = view.byteLength;
    let pos = this.pos;
    for (let i = 0; i < count; i++) {
      if (pos + 8 > end) throw new NeedMoreBytes();
      pos += 8 + view.getUint32(pos, true) + view.getUint32(pos + 4, true) * 2 ** 32;
    }
    if (pos > end) throw new NeedMoreBytes();
    this.pos = pos;
  }
}

/** Parses a GGUF header from the start of a file's bytes. Throws GgufFormatError if it is not a GGUF. */
export function parseGgufHeader(bytes: Buffer): GgufHeader {
  try {
    return parseOrNeedMore(bytes);
  } catch (error) {
    if (error instanceof NeedMoreBytes) throw new GgufFormatError("the GGUF header is truncated");
    throw error;
  }
}

/** Reads a file's GGUF header, reading more of the file only while the header needs it. */
export async function readGgufHeader(path: string): Promise<GgufHeader> {
  const handle = await open(path, "r");
  try {
    const { size } = await handle.stat();
    // Most headers fit in 1 MB; a 150k-token vocabulary takes ~6 MB. Each try parses from the start, so few tries.
    for (let length = Math.min(size, 1 << 20); ; length = Math.min(size, length * 8)) {
      const { buffer, bytesRead } = await handle.read(Buffer.alloc(length), 0, length, 0);
      try {
        return parseOrNeedMore(buffer.subarray(0, bytesRead));
      } catch (error) {
        if (!(error instanceof NeedMoreBytes) || length >= size) throw error;
      }
    }
  } catch (error) {
    if (error instanceof NeedMoreBytes) throw new GgufFormatError("the GGUF header is truncated");
    throw error;
  } finally {
    await handle.close();
  }
}

function parseOrNeedMore(bytes: Buffer): GgufHeader {
  if (bytes.length < 4 || bytes.readUInt32LE(0) !== MAGIC) throw new GgufFormatError("not a GGUF file (bad magic)");
  const cursor = new Cursor(bytes);
  cursor.skip(4);
  const version = cursor.u32();
  if (version < 2 || version > 3) throw new GgufFormatError(`unsupported GGUF version ${version}`);
  const tensorCount = cursor.u64();
  const kvCount = cursor.u64();
  const metadata: Record<string, GgufValue> = {};
  for (let i = 0; i < kvCount; i++) {
    const key = cursor.string();
    metadata[key] = cursor.value(cursor.u32() as GgufType);
  }
  const tensors: GgufTensorInfo[] = [];
  for (let i = 0; i < tensorCount; i++) {
    const name = cursor.string();
    const dims = Array.from({ length: cursor.u32() }, () => cursor.u64());
    tensors.push({ name, dims, type: cursor.u32(), offset: cursor.u64() });
  }
  const alignment = metadata["general.alignment"];
  const align = typeof alignment === "number" && alignment > 0 ? alignment : DEFAULT_ALIGNMENT;
  return { version, metadata, tensors, dataOffset: Math.ceil(cursor.pos / align) * align };
}

/** True when the file starts with the GGUF magic. */
export async function hasGgufMagic(path: string): Promise<boolean> {
  const handle = await open(path, "r");
  try {
    const { buffer, bytesRead } = await handle.read(Buffer.alloc(4), 0, 4, 0);
    return bytesRead === 4 && buffer.readUInt32LE(0) === MAGIC;
  } finally {
    await handle.close();
  }
}
