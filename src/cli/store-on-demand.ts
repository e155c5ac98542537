/**
 * What `kiln serve` offers on demand: every model in the store by its name, and with `--pull-on-demand` every catalog
 * name too (pulled on its first request). The store is read as each lookup happens, so a model pulled while the
 * server runs is served at once; the reads are synchronous because the engine answers model lookups at once, and
 * cheap (a folder listing and small JSON records).
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import type { OnDemandModel, OnDemandModels } from "../engine/index.js";
import { CATALOG, findCatalogEntry, kilnHome, resolveModel } from "../models/index.js";
import { isModelName } from "../models/refs.js";

export interface StoreOnDemandOptions {
  /** Offer catalog names the store lacks, pulling each on its first request. */
  pull: boolean;
  /** Names of models to load at start. */
  preload?: string[];
  log(line: string): void;
}

export function storeOnDemand(options: StoreOnDemandOptions): OnDemandModels {
  const dir = join(kilnHome(), "models");
  const stored = (name: string): OnDemandModel | undefined => {
    const file = join(dir, `${name}.gguf`);
    const info = isModelName(name) ? statSync(file, { throwIfNoEntry: false }) : undefined;
    if (!info?.isFile()) return undefined;
    return { id: name, fileSize: info.size, created: Math.floor(info.mtimeMs / 1000), contextSize: recordedContext(dir, name), resolve: async () => ({ id: name, path: file, aliases: [] }) };
  };
  const pullable = (name: string): OnDemandModel | undefined => {
    const entry = options.pull ? findCatalogEntry(name) : undefined;
    if (!entry) return undefined;
    return {
      id: entry.name, fileSize: entry.size, contextSize: entry.capabilities.contextLength,
      resolve: async () => {
        options.log(`kiln: pulling ${entry.name} (${Math.round(entry.size / 1024 ** 2)} MiB) for its first request`);
        const path = await resolveModel(entry.name);
        options.log(`kiln: pulled ${entry.name}`);
        return { id: entry.name, path, aliases: [] };
      },
    };
  };
  const find = (name: string) => stored(name) ?? pullable(name);
  return {
    find,
    list: () => {
      const all = new Set([...storedNames(dir), ...(options.pull ? CATALOG.map((entry) => entry.name) : [])]);
      return [...all].flatMap((name) => find(name) ?? []);
    },
    preload: options.preload,
  };
}

/** Names of the store's model files, sorted (none when the store does not exist yet). */
function storedNames(dir: string): string[] {
  try {
    return readdirSync(dir).filter((name) => name.endsWith(".gguf")).map((name) => name.slice(0, -".gguf".length)).sort();
  } catch {
    return [];
  }
}

/** The trained context the store recorded for a model, shown before its first load. */
function recordedContext(dir: string, name: string): number | undefined {
  try {
    const record = JSON.parse(readFileSync(join(dir, `${name}.json`), "utf8")) as { contextLength?: unknown };
    return typeof record.contextLength === "number" ? record.contextLength : undefined;
  } catch {
    return undefined;
  }
}
