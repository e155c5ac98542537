/** A chat source on the local engine: one loaded model; /model loads another and then unloads the old one. */
import type { Engine, ModelInfo } from "../engine/index.js";
import type { ChatSource, SourceModel } from "./chat-source.js";

/** Loads a model by reference (the default model when undefined). Supplied by the CLI, which owns the store. */
export type OpenModel = (ref: string | undefined) => Promise<{ engine: Engine; model: ModelInfo }>;

/** Opens the first model and returns the source. */
export async function createLocalSource(open: OpenModel, ref: string | undefined): Promise<ChatSource> {
  let current = await open(ref);
  const describe = (): SourceModel => ({ id: current.model.id, contextSize: current.model.contextSize });
  return {
    get model() {
      return describe();
    },
    generate: (request, signal) => current.engine.generate({ ...request, model: current.model.id }, { signal }),
    async switchModel(next) {
      const opened = await open(next);
      const previous = current;
      current = opened;
      await previous.engine.close();
      return describe();
    },
    close: () => current.engine.close(),
  };
}
