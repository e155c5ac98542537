/** Facts about a loaded GGUF for ModelInfo: `kiln models show` and `/v1/models` details. */
import { stat } from "node:fs/promises";
import type { Llama, LlamaContext, LlamaModel } from "node-llama-cpp";
import type { ModelInfo } from "../../backend.js";
import { formatBytes, type ContextChoice } from "./fit-context.js";

/** Identity of a model as the engine declares it. */
export interface ModelIdentity { id: string; aliases: string[]; path: string }

/**
 * `choice.size` is the per-sequence limit requests are held to (and why it is that size); the context's memory is what
 * all sequences cost.
 */
export async function describeModel(llama: Llama, model: LlamaModel, context: LlamaContext, identity: ModelIdentity, choice: ContextChoice): Promise<ModelInfo> {
  const file = await stat(identity.path);
  const general = model.fileInfo.metadata.general;
  const contextSize = choice.size;
  const gpuDevices = llama.gpu === false ? [] : await llama.getGpuDeviceNames().catch(() => [] as string[]);
  // node-llama-cpp's estimate of what the context holds (KV cache and compute buffers), in RAM and in VRAM.
  const { ram, vram } = context.memoryUsage;
  const placement = describePlacement({
    gpu: llama.gpu, gpuDevices, gpuLayers: model.gpuLayers, layers: model.fileInsights.totalLayers, ram, vram, contextSize, sequences: context.totalSequences,
  });
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
      gpuDevices,
      gpuLayers: model.gpuLayers,
      parallel: context.totalSequences,
      threads: context.idealThreads,
      contextMemory: ram + vram,
      contextMemoryRam: ram,
      contextMemoryVram: vram,
      /** Why the context has its size: "asked", "train" (the model's own), "cpu-cap", "memory" (what fits) or "needed" (all a one-shot reply can take). */
      contextSizeSource: choice.source,
      placement,
    },
  };
}

/** What describePlacement says: where the layers and the context's memory went. */
export interface Placement {
  gpu: Llama["gpu"];
  gpuDevices: string[];
  gpuLayers: number;
  /** The model's layers as node-llama-cpp counts them: the GGUF's block count and the output layer. */
  layers: number;
  /** The context's memory in RAM and in VRAM (bytes). */
  ram: number;
  vram: number;
  contextSize: number;
  sequences: number;
}

/**
 * One line for the start-up report, /v1/models and `kiln ps`: "29/29 layers on vulkan (NVIDIA H200), KV cache 1.2 GiB
 * in VRAM, context 32768 × 8", or "31 layers on the CPU, KV cache 858 MiB in RAM, context 8192 × 4".
 */
export function describePlacement(p: Placement): string {
  const context = `context ${p.contextSize} × ${p.sequences}`;
  const cache = `KV cache ${describeMemory(p.ram, p.vram)}`;
  const layers = p.gpu === false ? 0 : Math.min(p.gpuLayers, p.layers);
  if (layers === 0) return `${p.layers} layers on the CPU, ${cache}, ${context}`;
  const devices = p.gpuDevices.length ? ` (${p.gpuDevices.join(", ")})` : "";
  const rest = layers < p.layers ? `, ${p.layers - layers} on the CPU` : "";
  return `${layers}/${p.layers} layers on ${p.gpu}${devices}${rest}, ${cache}, ${context}`;
}

/** "1.2 GiB in VRAM", "858 MiB in RAM", or both when each holds a twentieth or more. */
function describeMemory(ram: number, vram: number): string {
  const total = ram + vram;
  const parts = [
    ...(vram > 0 && vram >= total / 20 ? [`${formatBytes(vram)} in VRAM`] : []),
    ...(ram >= total / 20 || vram === 0 ? [`${formatBytes(ram)} in RAM`] : []),
  ];
  return parts.join(" + ");
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
