/**
 * The llama.cpp backend as the engine sees it: one opened llama.cpp runtime that loads models into it, so the
 * engine never touches node-llama-cpp itself.
 */
import type { LoadedModel } from "../../backend.js";
import { loadLlamaCppModel, type LlamaCppModelOptions } from "./llama-cpp-model.js";
import { openLlama, type GpuChoice } from "./load-llama.js";

/** Settings shared by every model this backend loads. */
export type LlamaCppBackendOptions = Omit<LlamaCppModelOptions, "id" | "path" | "aliases" | "llama"> & { gpu?: GpuChoice };

export interface LlamaCppBackend {
  /** Loads one GGUF; failures are `backend_failure` errors naming the file. */
  load(model: { id: string; path: string; aliases?: string[] }): Promise<LoadedModel>;
  /** Releases the runtime (dispose the models first). */
  dispose(): Promise<void>;
}

export async function openLlamaCppBackend(options: LlamaCppBackendOptions): Promise<LlamaCppBackend> {
  const { gpu, ...modelOptions } = options;
  const llama = await openLlama(gpu);
  return {
    load: (model) => loadLlamaCppModel({ ...modelOptions, ...model, llama }),
    dispose: () => llama.dispose(),
  };
}
