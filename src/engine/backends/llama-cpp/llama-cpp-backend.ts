/**
 * The llama.cpp backend as the engine sees it: one opened llama.cpp runtime that loads models into it, so the
 * engine never touches node-llama-cpp itself.
 */
import type { Backend } from "../../backend.js";
import type { BackendSettings } from "../../engine-options.js";
import type { ModelDeclaration } from "../../model-specs.js";
import { CoreBudget } from "./core-budget.js";
import { describeLlamaRuntime } from "./describe-llama-runtime.js";
import { loadLlamaCppModel } from "./llama-cpp-model.js";
import { openLlama, warnOnStderr } from "./load-llama.js";
import { withRememberedBinaryChecks } from "../../text/binary-checks.js";

export async function openLlamaCppBackend(settings: BackendSettings): Promise<Backend<ModelDeclaration>> {
  const { gpu, cacheDir, warn = warnOnStderr, ...modelSettings } = settings;
  const llama = await withRememberedBinaryChecks(cacheDir, () => openLlama(gpu, warn));
  // Its models share the process's cores: each steps on its part while others load or serve.
  const coreBudget = new CoreBudget(modelSettings.threads);
  return {
    load: ({ id, path, aliases, reasoning, draft, warmUp = modelSettings.warmUp }) =>
      loadLlamaCppModel({ ...modelSettings, cacheDir, warn, id, path, aliases, reasoning, draft, llama, warmUp, coreBudget }),
    describe: () => describeLlamaRuntime(llama),
    dispose: () => llama.dispose(),
  };
}
