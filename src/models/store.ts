/**
 * The model store: `$KILN_HOME/models/<name>.gguf` and its record `<name>.json`, written last, so a file without
 * a finished pull behind it is never reported. `KILN_HOME` defaults to `~/.kiln`.
 */
import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import { link, mkdir, readdir, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import { homedir } from "node:os";
import { join } from "node:path";
import { EngineError } from "../errors/engine-error.js";
import { describeGguf, type GgufFacts } from "../gguf/describe-gguf.js";
import { readGgufHeader } from "../gguf/read-gguf-header.js";
import { checkModelName, isModelName } from "./refs.js";

/** What the store knows about one model; `<name>.json` holds it. */
export interface ModelRecord extends GgufFacts {
  /** Store name, the file's stem. */
  name: string;
  /** The reference it was pulled from (`pypi:…`, `hf:…`, a URL, an absolute path), or "unknown". */
  source: string;
  /** Absolute path of the `.gguf` file. */
  file: string;
  /** Bytes. */
  size: number;
  /** Hex SHA-256 of the whole file. */
  sha256: string;
  /** ISO time the pull finished. */
  pulledAt: string;
}

/** Where the store lives; tests point it at a temp folder. */
export interface StoreOptions {
  /** Overrides KILN_HOME. */
  home?: string;
}

/** The kiln home folder: `home`, else KILN_HOME, else `~/.kiln`. */
export function kilnHome(options: StoreOptions = {}): string {
  return options.home ?? (process.env.KILN_HOME || join(homedir(), ".kiln"));
}

/** kiln's cache folder: what the engine keeps between runs (the prefix cache's disk tier, start-up facts it measured). */
export function cacheDir(options: StoreOptions = {}): string {
  return join(kilnHome(options), "cache");
}

/** The paths a model name owns in the store: the file, its record, a download's partial, a multi-part pull's parts folder. */
export function modelPaths(name: string, options: StoreOptions = {}) {
  const dir = join(kilnHome(options), "models");
  checkModelName(name);
  const parts = join(dir, `${name}.parts`);
  return { dir, file: join(dir, `${name}.gguf`), record: join(dir, `${name}.json`), partial: join(dir, `${name}.gguf.partial`), parts };
}

/** Every model in the store, by name. Files without a record (copied in by hand) are recorded on first sight. */
export async function listModels(options: StoreOptions = {}): Promise<ModelRecord[]> {
  const dir = join(kilnHome(options), "models");
  const entries = await readdir(dir).catch(() => [] as string[]);
  const names = entries.filter((e) => e.endsWith(".gguf")).map((e) => e.slice(0, -".gguf".length)).filter(isModelName);
  const records = await Promise.all(names.sort().map((name) => findModel(name, options)));
  return records.filter((r): r is ModelRecord => r !== undefined);
}

/** One model's record; throws EngineError(not_found) when the store has no such model. */
export async function showModel(name: string, options: StoreOptions = {}): Promise<ModelRecord> {
  const record = await findModel(name, options);
  if (!record) throw notInStore(name);
  return record;
}

/** The record of a stored model, or undefined when its `.gguf` is absent. */
export async function findModel(name: string, options: StoreOptions = {}): Promise<ModelRecord | undefined> {
  const paths = modelPaths(name, options);
  const info = await stat(paths.file).catch(() => undefined);
  if (!info?.isFile()) return undefined;
  const text = await readFile(paths.record, "utf8").catch(() => undefined);
  const record = text === undefined ? undefined : parseRecord(text);
  return record ? { ...record, file: paths.file } : adoptModel(name, options);
}

/** Removes a model and its record (and any unfinished download of it, multi-part ones included). */
export async function removeModel(name: string, options: StoreOptions = {}): Promise<void> {
  const paths = modelPaths(name, options);
  if (!(await findModel(name, options))) throw notInStore(name);
  // The record goes first: a model whose record is gone but file remains is re-adopted, never half-listed.
  await rm(paths.record, { force: true });
  await Promise.all([rm(paths.file, { force: true }), rm(paths.partial, { force: true }), rm(paths.parts, { recursive: true, force: true })]);
}

/** Reads the GGUF facts of a file and builds its record. */
export async function recordFor(name: string, source: string, file: string, sha256: string): Promise<ModelRecord> {
  const [header, info] = await Promise.all([readGgufHeader(file), stat(file)]);
  return { name, source, file, size: info.size, sha256, pulledAt: new Date().toISOString(), ...describeGguf(header) };
}

/** Writes a record atomically (temp file, then rename). */
export async function writeRecord(record: ModelRecord, options: StoreOptions = {}): Promise<void> {
  const paths = modelPaths(record.name, options);
  await mkdir(paths.dir, { recursive: true });
  const temp = `${paths.record}.${process.pid}.tmp`;
  await writeFile(temp, `${JSON.stringify(record, null, 2)}\n`);
  await rename(temp, paths.record);
}

/** SHA-256 of a whole file, hex. */
export async function hashFile(path: string): Promise<string> {
  const hash = createHash("sha256");
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest("hex");
}

/** Records a `.gguf` that came without one; never overwrites a record a pull wrote meanwhile. */
async function adoptModel(name: string, options: StoreOptions): Promise<ModelRecord | undefined> {
  const paths = modelPaths(name, options);
  const record = await recordFor(name, "unknown", paths.file, await hashFile(paths.file)).catch(() => undefined);
  if (!record) return undefined;
  const temp = `${paths.record}.${process.pid}.tmp`;
  await writeFile(temp, `${JSON.stringify(record, null, 2)}\n`);
  await link(temp, paths.record).catch(() => undefined);
  await rm(temp, { force: true });
  return record;
}

/** A record as written by writeRecord; undefined when unreadable (then the file is described afresh). */
function parseRecord(text: string): ModelRecord | undefined {
  try {
    const record = JSON.parse(text) as ModelRecord;
    return typeof record.sha256 === "string" ? record : undefined;
  } catch {
    return undefined;
  }
}

function notInStore(name: string): EngineError {
  return new EngineError("not_found", `model "${name}" is not in the store`, { param: "model" });
}

