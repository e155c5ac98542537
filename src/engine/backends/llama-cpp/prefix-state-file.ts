/**
 * One saved prefix on disk: llama.cpp's sequence state file (`<name>.state`: magic "ggsq", version, token count,
 * tokens, then the KV cells) and beside it a record (`<name>.json`) written last, holding the cache key, the tokens,
 * the state file's size and CRC-32. A state is loaded only after the record, the size, the checksum and the tokens
 * in the state file's own header all agree, so a truncated, corrupt or foreign file is refused before llama.cpp
 * reads it (it trusts what it reads and may crash on another model's state).
 */
import { createReadStream } from "node:fs";
import { open, readFile, rm, stat } from "node:fs/promises";
import { isDeepStrictEqual } from "node:util";
import { crc32 } from "node:zlib";
import type { PrefixCacheKey } from "./prefix-cache-key.js";

/** The record of one state file (`<name>.json`). */
export interface PrefixRecord {
  version: 1;
  key: PrefixCacheKey;
  /** The tokens the state holds, in order: what a prompt's prefix is compared with. */
  tokens: number[];
  /** Size of the state file in bytes. */
  bytes: number;
  /** CRC-32 of the state file: catches truncation and corruption at a fraction of SHA-256's cost on large states. */
  crc32: number;
  /** ISO time of the save. */
  savedAt: string;
}

/** llama.cpp's LLAMA_STATE_SEQ_MAGIC ("ggsq") as it reads little-endian. */
const STATE_MAGIC = 0x67677371;

export const statePath = (base: string) => `${base}.state`;
export const recordPath = (base: string) => `${base}.json`;

/** Reads and shape-checks a record; undefined when missing or malformed. */
export async function readPrefixRecord(base: string): Promise<PrefixRecord | undefined> {
  try {
    const record = JSON.parse(await readFile(recordPath(base), "utf8")) as PrefixRecord;
    const valid = record.version === 1 && Array.isArray(record.tokens) && record.tokens.length > 0
      && Number.isInteger(record.bytes) && Number.isInteger(record.crc32) && typeof record.key === "object";
    return valid ? record : undefined;
  } catch {
    return undefined;
  }
}

/** CRC-32 of a file, read in chunks (the event loop stays free). */
export async function checksumFile(path: string): Promise<number> {
  let crc = 0;
  for await (const chunk of createReadStream(path, { highWaterMark: 1 << 20 })) crc = crc32(chunk as Buffer, crc);
  return crc;
}

/**
 * Why a state file must not be loaded for `key`, or undefined when it may: the record's key, the file's size and
 * checksum, and the token list in the state's header must all match.
 */
export async function checkStateFile(base: string, record: PrefixRecord, key: PrefixCacheKey): Promise<string | undefined> {
  if (!isDeepStrictEqual(record.key, key)) return "it was saved for another model or other context settings";
  if (record.tokens.length > key.contextSize) return "it holds more tokens than a sequence";
  try {
    const info = await stat(statePath(base));
    if (info.size !== record.bytes) return `its state file has ${info.size} bytes, ${record.bytes} were saved`;
    if (!headerMatches(await readHeader(base, record.tokens.length), record.tokens)) return "its state header does not match its record";
    if ((await checksumFile(statePath(base))) !== record.crc32) return "its state file fails the checksum";
    return undefined;
  } catch (error) {
    return `its state file cannot be read (${error instanceof Error ? error.message : String(error)})`;
  }
}

async function readHeader(base: string, tokenCount: number): Promise<Buffer> {
  const handle = await open(statePath(base), "r");
  try {
    const buffer = Buffer.alloc(12 + 4 * tokenCount);
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0);
    return buffer.subarray(0, bytesRead);
  } finally {
    await handle.close();
  }
}

function headerMatches(header: Buffer, tokens: number[]): boolean {
  if (header.length !== 12 + 4 * tokens.length) return false;
  if (header.readUInt32LE(0) !== STATE_MAGIC || header.readUInt32LE(8) !== tokens.length) return false;
  return tokens.every((token, i) => header.readUInt32LE(12 + 4 * i) === token);
}

/**
 * Removes a state file and its record (the record first: a state without a record is never considered). Best
 * effort: a folder that cannot be written any more must not fail a request or a shutdown.
 */
export async function removePrefixFiles(base: string): Promise<void> {
  await rm(recordPath(base), { force: true }).catch(() => undefined);
  await rm(statePath(base), { force: true }).catch(() => undefined);
}
