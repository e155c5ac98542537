/**
 * The WebGPU backend as the engine sees it: one Dawn device, opened at the first load and shared by every model
 * this backend loads; `describe` reports the adapter, its tier and limits (`kiln info --backend webgpu`).
 */
import type { LoadedModel } from "../../backend.js";
import type { IdFactory } from "../../../lib/ids.js";
import { openGpuDevice, type GpuDevice, type GpuDeviceInfo } from "./device.js";
import { loadWebGpuModel } from "./webgpu-model.js";

export interface WebGpuBackendOptions {
  ctxSize?: number;
  prefixCache?: boolean;
  /** Prompt tokens per prefill batch (see DecodePlanOptions.prefillBatch). */
  promptBatch?: number;
  parallel?: number;
  ids: IdFactory;
}

export interface WebGpuBackend {
  load(model: { id: string; path: string; aliases?: string[] }): Promise<LoadedModel>;
  describe(): Promise<GpuDeviceInfo>;
  dispose(): Promise<void>;
}

export function openWebGpuBackend(options: WebGpuBackendOptions): WebGpuBackend {
  let opening: Promise<GpuDevice> | undefined;
  const device = () => (opening ??= openGpuDevice());
  return {
    load: async (model) => loadWebGpuModel({ ...model, gpu: await device(), ctxSize: options.ctxSize, prefixCache: options.prefixCache, promptBatch: options.promptBatch, parallel: options.parallel, ids: options.ids }),
    describe: async () => (await device()).info,
    async dispose() {
      if (opening) (await opening.catch(() => undefined))?.destroy();
    },
  };
}
