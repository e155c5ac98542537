/** The remote backend as the engine sees it: nothing shared between models, each one its own replica pool. */
import type { Backend } from "../../backend.js";
import type { RemoteModelSpec } from "../../model-specs.js";
import { createRemoteModel } from "./remote-model.js";

export async function openRemoteBackend(): Promise<Backend<RemoteModelSpec>> {
  return { load: createRemoteModel, dispose: async () => undefined };
}
