/** Facts about a loaded GGUF for ModelInfo: `kiln models show` and `/v1/models` details. */
import { stat } from "node:fs/promises";
import type { Llama, LlamaContext, LlamaModel } from "node-llama-cpp";
import type { ModelInfo } from "../../backend.js";

/** Identity of a model as the engine declares it. */
export interface ModelIdentity { id: string; aliases: string[]; path: string }

/** `contextSize` is the per-sequence limit requests are held to; the context's memory is what all sequences cost. */
export async function describeModel(llama: Llama, model: LlamaModel, context: LlamaContext, identity: ModelIdentity, contextSize: number): Promise<ModelInfo> {
  const file = await stat(identity.path);
  const general = model.fileInfo.metadata.general;
  return {
    id: identity.id,
    aliases: identity.aliases,
    backend: "llama-cpp",
    contextSize,
    trainContextSize: model.trainContextSize,
    created: Math.floor(file.mtimeMs / 1000),
    ownedBy: "kiln",
    fim: hasInfillTokens(model),
    details: {
      path: identity.path,
      fileSize: file.size,
      architecture: general.architecture,
      name: general.name,
      organization: (general as { organization?: string }).organization,
      parameters: model.fileInsights.totalParameters,
      sizeLabel: general.size_label,
      quantization: quantizationOf(model),
      layers: model.fileInsights.totalLayers,
      chatTemplate: Boolean(model.fileInfo.metadata.tokenizer?.chat_template),
      gpu: llama.gpu,
      gpuLayers: model.gpuLayers,
      parallel: context.totalSequences,
      threads: context.idealThreads,
      // node-llama-cpp's estimate of what the context holds (KV cache and compute buffers), RAM and VRAM together.
      contextMemory: context.memoryUsage.ram + context.memoryUsage.vram,
    },
  };
}

/** FIM needs the prefix, suffix and middle markers. */
export function hasInfillTokens(model: LlamaModel): boolean {
  const { prefix, suffix, middle } = model.tokens.infill;
  return prefix != null && suffix != null && middle != null;
}

/** node-llama-cpp describes the model as "<arch> <size> <quant>" (e.g. "llama 256M Q4_1"); the quant is last. */
function quantizationOf(model: LlamaModel): string | undefined {
  return model.typeDescription.split(" ").at(-1);
}
