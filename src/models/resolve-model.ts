/**
 * `resolveModel(ref)`: the path of a model file for a reference, pulling it first when it is a catalog name (the
 * default model included) or a remote reference not yet in the store. Local `.gguf` paths are used in place.
 */
import { stat } from "node:fs/promises";
import { EngineError } from "../errors/engine-error.js";
import { pullModel, type PullOptions } from "./pull.js";
import type { PullProgress } from "./pull-progress.js";
import { DEFAULT_MODEL, parseModelRef, type PullableRef } from "./refs.js";
import { findModel, type ModelRecord } from "./store.js";

/** Options of resolveModel; `onProgress` sees the events of a pull, when one happens. */
export interface ResolveOptions extends PullOptions {
  onProgress?: (progress: PullProgress) => void;
}

/** Pulls in flight in this process, by store path, so concurrent callers share one download. */
const pulling = new Map<string, Promise<string>>();

/** Returns the path of the model file `ref` names (the default model when omitted), pulling it if needed. */
export async function resolveModel(ref: string = DEFAULT_MODEL, options: ResolveOptions = {}): Promise<string> {
  const parsed = parseModelRef(ref, { name: options.name, catalog: options.catalog });
  if (parsed.kind === "file") {
    if (!(await stat(parsed.path).catch(() => undefined))?.isFile()) throw new EngineError("not_found", `no such model file: ${parsed.path}`, { param: "model" });
    return parsed.path;
  }
  const existing = await findModel(parsed.name, options);
  if (existing && (parsed.kind === "store" || isPulledFrom(existing, parsed))) return existing.file;
  if (parsed.kind === "store") {
    throw new EngineError("not_found", `model "${parsed.name}" is not in the store or the catalog (kiln models list --available shows what kiln can pull by name)`, { param: "model" });
  }
  if (existing) {
    throw new EngineError("invalid_request", `the store already has a different model named "${parsed.name}" (from ${existing.source})`, { param: "model" });
  }
  const key = `${options.home ?? ""}\0${parsed.name}`;
  const inFlight = pulling.get(key) ?? pullToPath(ref, options).finally(() => pulling.delete(key));
  pulling.set(key, inFlight);
  return inFlight;
}

/** Whether a stored model came from this reference; for a catalog name, whether it has the catalog's bytes. */
export function isPulledFrom(record: ModelRecord, ref: PullableRef): boolean {
  return ref.kind === "catalog" ? record.sha256 === ref.entry.sha256 : record.source === ref.source;
}

async function pullToPath(ref: string, options: ResolveOptions): Promise<string> {
  const pull = pullModel(ref, options);
  let step = await pull.next();
  for (; !step.done; step = await pull.next()) options.onProgress?.(step.value);
  return step.value.file;
}
