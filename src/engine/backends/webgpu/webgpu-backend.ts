/**
 * The WebGPU backend as the engine sees it: one Dawn device, opened at the first load and shared by every model
 * this backend loads; `describe` reports the adapter, its API, tier and limits (`kiln info --backend webgpu`).
 */
import { EngineError } from "../../../errors/engine-error.js";
import type { Backend } from "../../backend.js";
import type { BackendSettings } from "../../engine-options.js";
import type { ModelDeclaration } from "../../model-specs.js";
import { openGpuDevice, type GpuDevice } from "./device.js";
import { loadWebGpuModel } from "./webgpu-model.js";

export async function openWebGpuBackend(settings: BackendSettings): Promise<Backend<ModelDeclaration>> {
  let opening: Promise<GpuDevice> | undefined;
  const device = () => (opening ??= openGpuDevice());
  const { ctxSize, prefixCache, promptBatch, parallel, ids, warmUp, promptThreads, cacheDir } = settings;
  return {
    async load({ id, path, aliases, reasoning, draft, warmUp: warm = warmUp }) {
      if (draft) throw new EngineError("invalid_request", `${id}: draft models (speculative decoding) run on the llama-cpp backend only`, { param: "draftModel" });
      return loadWebGpuModel({ id, path, aliases, reasoning, gpu: await device(), ctxSize, prefixCache, promptBatch, parallel, ids, warmUp: warm, promptThreads, cacheDir });
    },
    async describe() {
      const { backend: api, ...adapter } = (await device()).info;
      return { api, ...adapter };
    },
    async dispose() {
      if (opening) (await opening.catch(() => undefined))?.destroy();
    },
  };
}
