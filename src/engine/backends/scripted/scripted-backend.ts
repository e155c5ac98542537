/** The scripted backend as the engine sees it: each model replays its own recording, nothing is shared. */
import type { Backend } from "../../backend.js";
import type { ScriptedModelSpec } from "../../model-specs.js";
import { createScriptedModel } from "./scripted-model.js";

export async function openScriptedBackend(): Promise<Backend<ScriptedModelSpec>> {
  return { load: async (spec) => createScriptedModel(spec), dispose: async () => undefined };
}
