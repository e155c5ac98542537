/**
 * Opens the engine on one local model for `kiln run` and `kiln chat`: resolves the reference through the model
 * store (pulling the default model first when it is missing, with progress on stderr), then loads it.
 */
import { type Engine, type ModelInfo, EngineError } from "../engine/index.js";
import { UsageError } from "./report-error.js";
import { toGpuChoice, type ModelFlags } from "./options.js";
import { resolveDraft } from "./resolve-draft.js";
import { optimizeTokenPathSooner } from "./token-path-tiers.js";

/** An engine serving exactly one model, and that model's facts. */
export interface LocalEngine {
  engine: Engine;
  model: ModelInfo;
}

/**
 * Resolves and loads `flags.model` (the default model when absent), for one user (`kiln run`, `kiln chat`), with
 * `parallel` sequences (default 1) and, unless
 * --ctx-size says otherwise, a context of at most `ctxSizeAtMost` tokens where the caller knows what it needs.
 * `quiet` hides pull progress and load warnings (while a full-screen UI owns the terminal).
 */
export async function openLocalEngine(flags: ModelFlags & { parallel?: number; ctxSizeAtMost?: number }, options: { quiet?: boolean } = {}): Promise<LocalEngine> {
  const { resolveModel, parseModelRef, createProgressRenderer, cacheDir, DEFAULT_MODEL } = await import("../models/index.js");
  const ref = flags.model ?? DEFAULT_MODEL;
  const renderer = options.quiet ? undefined : createProgressRenderer(process.stderr);
  let path: string;
  let draft;
  try {
    path = await resolveModel(ref, { onProgress: (progress) => renderer?.update(progress) });
    draft = await resolveDraft(flags.draftModel, flags.draftMax, (progress) => renderer?.update(progress));
  } catch (error) {
    if (error instanceof EngineError && error.code === "not_found") {
      throw new UsageError(error.message, "`kiln models list` shows the models in the store; a path must point to a .gguf file");
    }
    throw error;
  } finally {
    renderer?.finish();
  }
  const { createEngine } = await import("../engine/index.js");
  const id = parseModelRef(ref).name;
  const engine = await createEngine({
    models: [{ id, path, backend: flags.backend, draft }], parallel: flags.parallel ?? 1, ctxSize: flags.ctxSize,
    ctxSizeAtMost: flags.ctxSizeAtMost, threads: flags.threads,
    // One request at a time: a long piped prompt is tokenized in place, without waiting over a second for a worker.
    promptThreads: false,
    gpu: toGpuChoice(flags.gpu), gpuLayers: flags.gpuLayers, flashAttention: flags.flashAttention, cacheDir: cacheDir(),
    // Load warnings go to stderr, except while a full-screen UI owns the terminal.
    warn: options.quiet ? () => undefined : undefined,
  });
  optimizeTokenPathSooner();
  return { engine, model: engine.listModels()[0]! };
}
