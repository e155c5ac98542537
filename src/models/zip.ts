/**
 * Just enough of the zip format to take one file out of a Python wheel: the central directory (with zip64 sizes),
 * and a stream of one entry's bytes, inflated with node:zlib. APPNOTE: https://pkware.cachefly.net/webdocs/casestudies/APPNOTE.TXT
 */
import { createReadStream } from "node:fs";
import { open, type FileHandle } from "node:fs/promises";
import { Readable } from "node:stream";
import { createInflateRaw } from "node:zlib";

/** One file inside a zip archive. */
export interface ZipEntry {
  /** Path inside the archive, `/`-separated. */
  name: string;
  /** 0 stored, 8 deflated. */
  method: number;
  crc32: number;
  compressedSize: number;
  size: number;
  /** Offset of the entry's local header. */
  localHeaderOffset: number;
}

const EOCD = 0x06054b50;
const EOCD64_LOCATOR = 0x07064b50;
const CENTRAL = 0x02014b50;
const LOCAL = 0x04034b50;
const MAX_U32 = 0xffffffff;
/** Large reads and inflate chunks: a model is hundreds of MB, and each chunk costs a write and an event. */
const CHUNK = 1 << 20;

/** Lists the entries of a zip file from its central directory. */
export async function readZipEntries(path: string): Promise<ZipEntry[]> {
  const handle = await open(path, "r");
  try {
    const { size } = await handle.stat();
    const { offset, length } = await findCentralDirectory(handle, size);
    const dir = await readAt(handle, offset, length);
    return parseCentralDirectory(dir);
  } finally {
    await handle.close();
  }
}

/** A stream of one entry's uncompressed bytes. */
export async function openZipEntry(path: string, entry: ZipEntry): Promise<Readable> {
  if (entry.method !== 0 && entry.method !== 8) throw new Error(`${entry.name}: unsupported zip compression method ${entry.method}`);
  const handle = await open(path, "r");
  let local: Buffer;
  try {
    local = await readAt(handle, entry.localHeaderOffset, 30);
  } finally {
    await handle.close();
  }
  if (local.readUInt32LE(0) !== LOCAL) throw new Error(`${entry.name}: bad zip local header`);
  const start = entry.localHeaderOffset + 30 + local.readUInt16LE(26) + local.readUInt16LE(28);
  if (entry.compressedSize === 0) return Readable.from([]);
  const raw = createReadStream(path, { start, end: start + entry.compressedSize - 1, highWaterMark: CHUNK });
  if (entry.method === 0) return raw;
  const inflate = createInflateRaw({ chunkSize: CHUNK });
  raw.on("error", (error) => inflate.destroy(error));
  return raw.pipe(inflate);
}

async function findCentralDirectory(handle: FileHandle, size: number): Promise<{ offset: number; length: number }> {
  const tailLength = Math.min(size, 22 + 0xffff);
  const tail = await readAt(handle, size - tailLength, tailLength);
  for (let i = tail.length - 22; i >= 0; i--) {
    if (tail.readUInt32LE(i) !== EOCD) continue;
    const length = tail.readUInt32LE(i + 12);
    const offset = tail.readUInt32LE(i + 16);
    if (offset !== MAX_U32 || i < 20 || tail.readUInt32LE(i - 20) !== EOCD64_LOCATOR) return { offset, length };
    // zip64: the locator points at the zip64 end record, which holds the real size and offset.
    const eocd64 = await readAt(handle, Number(tail.readBigUInt64LE(i - 20 + 8)), 56);
    return { length: Number(eocd64.readBigUInt64LE(40)), offset: Number(eocd64.readBigUInt64LE(48)) };
  }
  throw new Error("not a zip archive (no end of central directory)");
}

function parseCentralDirectory(dir: Buffer): ZipEntry[] {
  const entries: ZipEntry[] = [];
  for (let at = 0; at + 46 <= dir.length && dir.readUInt32LE(at) === CENTRAL; ) {
    const nameLength = dir.readUInt16LE(at + 28);
    const extraLength = dir.readUInt16LE(at + 30);
    const entry: ZipEntry = {
      name: dir.toString("utf8", at + 46, at + 46 + nameLength),
      method: dir.readUInt16LE(at + 10),
      crc32: dir.readUInt32LE(at + 16),
      compressedSize: dir.readUInt32LE(at + 20),
      size: dir.readUInt32LE(at + 24),
      localHeaderOffset: dir.readUInt32LE(at + 42),
    };
    applyZip64(entry, dir.subarray(at + 46 + nameLength, at + 46 + nameLength + extraLength));
    entries.push(entry);
    at += 46 + nameLength + extraLength + dir.readUInt16LE(at + 32);
  }
  return entries;
}

/** The zip64 extra field (id 1) holds, in order, whichever of size, compressed size, offset overflowed. */
function applyZip64(entry: ZipEntry, extra: Buffer): void {
  for (let at = 0; at + 4 <= extra.length; at += 4 + extra.readUInt16LE(at + 2)) {
    if (extra.readUInt16LE(at) !== 1) continue;
    let field = at + 4;
    const next = () => Number(extra.readBigUInt64LE((field += 8) - 8));
    if (entry.size === MAX_U32) entry.size = next();
    if (entry.compressedSize === MAX_U32) entry.compressedSize = next();
    if (entry.localHeaderOffset === MAX_U32) entry.localHeaderOffset = next();
  }
}

async function readAt(handle: FileHandle, position: number, length: number): Promise<Buffer> {
  const { buffer, bytesRead } = await handle.read(Buffer.alloc(length), 0, length, position);
  if (bytesRead < length) throw new Error("the zip archive is truncated");
  return buffer;
}
