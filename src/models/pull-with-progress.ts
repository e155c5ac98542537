/**
 * A pull as `kiln models pull` runs it: skips a model the store already has from the same source (unless
 * forced), draws progress on a stream, and stops cleanly on Ctrl+C, keeping a partial download to resume.
 * `resolveWithProgress` is the same display around resolveModel, for commands that need a model to run.
 */
import { pullModel, type PullOptions } from "./pull.js";
import { createProgressRenderer } from "./progress-renderer.js";
import { parseModelRef } from "./refs.js";
import { isPulledFrom, resolveModel, type ResolveOptions } from "./resolve-model.js";
import { findModel, type ModelRecord } from "./store.js";

/** Options of pullWithProgress. */
export interface PullWithProgressOptions extends PullOptions {
  /** Pull even when the store has the model from the same source. */
  force?: boolean;
}

/** Pulls `ref` with a progress display on `stream`; resolves to the stored record. */
export async function pullWithProgress(ref: string, options: PullWithProgressOptions, stream: NodeJS.WriteStream): Promise<ModelRecord> {
  const parsed = parseModelRef(ref, { name: options.name, catalog: options.catalog });
  const existing = parsed.kind === "store" || options.force ? undefined : await findModel(parsed.name, options);
  if (existing && parsed.kind !== "store" && isPulledFrom(existing, parsed)) {
    stream.write(`${existing.name} is already in the store (use --force to pull it again)\n`);
    return existing;
  }
  const controller = new AbortController();
  const abort = (): void => controller.abort(new Error("the pull was interrupted; run it again to resume"));
  process.once("SIGINT", abort);
  const renderer = createProgressRenderer(stream);
  try {
    const pull = pullModel(ref, { ...options, signal: options.signal ?? controller.signal });
    let step = await pull.next();
    for (; !step.done; step = await pull.next()) renderer.update(step.value);
    return step.value;
  } finally {
    renderer.finish();
    process.off("SIGINT", abort);
  }
}

/** resolveModel for commands: a pull it has to make (the default model on first use) shows progress on `stream`. */
export async function resolveWithProgress(ref: string | undefined, options: ResolveOptions, stream: NodeJS.WriteStream): Promise<string> {
  const renderer = createProgressRenderer(stream);
  try {
    return await resolveModel(ref, { ...options, onProgress: (p) => renderer.update(p) });
  } finally {
    renderer.finish();
  }
}
