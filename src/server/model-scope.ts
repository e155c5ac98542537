/** Model scopes of keys: which models a principal may see and use (Principal.models). */
import { EngineError, type ModelInfo, type Engine } from "../engine/index.js";

/** Whether a key scoped to `models` (undefined = all) may use this model, named by id or any alias. */
export function allowsModel(models: readonly string[] | undefined, info: ModelInfo): boolean {
  return !models || models.includes(info.id) || info.aliases.some((alias) => models.includes(alias));
}

/**
 * Throws `permission` when the named model exists but is outside the scope. An unknown name passes, so the
 * engine answers it with its usual `not_found`.
 */
export function checkModelScope(engine: Engine, models: readonly string[] | undefined, requested: string): void {
  const info = models ? engine.findModel(requested) : undefined;
  if (info && !allowsModel(models, info)) {
    throw new EngineError("permission", `This API key may not use the model "${requested}"`, { param: "model" });
  }
}
