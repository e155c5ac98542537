/**
 * Fetches a catalog model: tries its sources in order, says which one it is using, and keeps only bytes whose
 * SHA-256 is the catalog's. A multi-part source extracts each part into `<name>.parts/` (a finished part is
 * kept, so an interrupted pull resumes part by part), then concatenates them into the store's partial file.
 */
import { createHash } from "node:crypto";
import { mkdir, open, readdir, rename, rm, stat } from "node:fs/promises";
import { join } from "node:path";
import { describeSource, type CatalogEntry, type CatalogSource } from "./catalog.js";
import type { DownloadOptions } from "./download.js";
import { appendHashed, fetchSource } from "./fetch-source.js";
import { formatBytes } from "./progress-renderer.js";
import { CorruptDataError, PullError, type FetchProgress } from "./pull-progress.js";
import { parseRemote } from "./refs.js";
import type { modelPaths } from "./store.js";

type Paths = ReturnType<typeof modelPaths>;

/** Fetches `entry` into `paths.partial`; returns its SHA-256 and the source that gave it. */
export async function* fetchCatalogModel(entry: CatalogEntry, paths: Paths, options: DownloadOptions): AsyncGenerator<FetchProgress, { sha256: string; source: string }> {
  const failures: string[] = [];
  for (const [i, source] of entry.sources.entries()) {
    const label = describeSource(source);
    yield { phase: "download", receivedBytes: 0, totalBytes: entry.size, message: `pulling from ${label}` };
    try {
      const sha256 = yield* fetchFrom(source, entry, paths, options);
      if (sha256 === entry.sha256) return { sha256, source: label };
      await discard(paths);
      failures.push(`${label} gave a file with sha256 ${sha256}, not the catalog's ${entry.sha256}`);
    } catch (error) {
      options.signal?.throwIfAborted();
      if (!(error instanceof PullError)) throw error;
      failures.push(`${label}: ${error.message}`);
    }
    if (i + 1 < entry.sources.length) yield { phase: "download", receivedBytes: 0, totalBytes: entry.size, message: `${failures.at(-1)}; trying the next source` };
  }
  throw new PullError(`could not pull ${entry.name}: ${failures.join("; ")}`);
}

function fetchFrom(source: CatalogSource, entry: CatalogEntry, paths: Paths, options: DownloadOptions): AsyncGenerator<FetchProgress, string> {
  if ("parts" in source) return fetchParts(source.parts, entry, paths, options);
  return fetchSource(remoteRef(source.ref, entry), paths.partial, options);
}

/** Extracts each missing part into the parts folder, then assembles them; a corrupt part discards them all. */
async function* fetchParts(parts: readonly string[], entry: CatalogEntry, paths: Paths, options: DownloadOptions): AsyncGenerator<FetchProgress, string> {
  await mkdir(paths.parts, { recursive: true });
  const partFile = (i: number) => join(paths.parts, `${i + 1}.part`);
  const kept = new Set(await readdir(paths.parts));
  const missing = [...parts.keys()].filter((i) => !kept.has(`${i + 1}.part`));
  let done = 0;
  for (const i of parts.keys()) if (!missing.includes(i)) done += (await stat(partFile(i))).size;
  if (done > 0) {
    const message = `${parts.length - missing.length} of ${parts.length} parts (${formatBytes(done)}) are here from an earlier pull`;
    yield { phase: "download", receivedBytes: done, totalBytes: entry.size, resumedFrom: done, message };
  }
  for (const i of missing) {
    options.signal?.throwIfAborted();
    const part = { index: i + 1, count: parts.length };
    try {
      for await (const progress of fetchSource(remoteRef(parts[i]!, entry), `${partFile(i)}.partial`, options)) {
        if (!progress.message) yield { phase: "download", receivedBytes: done + progress.receivedBytes, totalBytes: entry.size, part };
      }
    } catch (error) {
      // A corrupt part spoils the pull; otherwise the finished parts stay for the next pull to resume from.
      const resumable = done > 0 && !(error instanceof CorruptDataError);
      if (!resumable) await discard(paths);
      throw resumable && error instanceof PullError ? new PullError(`${error.message}; run the same pull again to resume`) : error;
    }
    await rename(`${partFile(i)}.partial`, partFile(i));
    done += (await stat(partFile(i))).size;
  }
  return yield* assemble(parts.length, entry, paths);
}

/** Concatenates the parts into the partial file, hashing them; the parts folder goes once they are all in. */
async function* assemble(count: number, entry: CatalogEntry, paths: Paths): AsyncGenerator<FetchProgress, string> {
  const hash = createHash("sha256");
  const out = await open(paths.partial, "w");
  let written = 0;
  try {
    for (let i = 1; i <= count; i++) {
      for await (written of appendHashed(out, join(paths.parts, `${i}.part`), hash, written)) {
        yield { phase: "assemble", receivedBytes: written, totalBytes: entry.size };
      }
    }
  } finally {
    await out.close();
  }
  await rm(paths.parts, { recursive: true, force: true });
  return hash.digest("hex");
}

function remoteRef(ref: string, entry: CatalogEntry) {
  const parsed = parseRemote(ref, entry.name);
  if (!parsed) throw new PullError(`catalog entry ${entry.name} has a source kiln cannot fetch: ${ref}`);
  return parsed;
}

/** Drops everything a pull of this model left behind. */
async function discard(paths: Paths): Promise<void> {
  await Promise.all([rm(paths.partial, { force: true }), rm(paths.parts, { recursive: true, force: true })]);
}
