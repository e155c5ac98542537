/**
 * The KV cache's element types (llama.cpp's -ctk/-ctv): f16 by default, q8_0 or q4_0 to hold a long context in about
 * half or a third of the memory. llama.cpp can only read a quantized V cache through flash attention, so a quantized
 * V type turns it on.
 */
import { GgmlType, type LlamaContext, type LlamaContextOptions, type LlamaModel } from "node-llama-cpp";
import type { KvCacheType, KvCacheTypes } from "../../engine-options.js";

const GGML_TYPES: Record<KvCacheType, GgmlType> = { f16: GgmlType.F16, q8_0: GgmlType.Q8_0, q4_0: GgmlType.Q4_0 };

/** The context options that give these types; none for the default f16/f16, so default contexts stay as they were. */
export function kvCacheContextOptions(types: KvCacheTypes | undefined): Partial<LlamaContextOptions> {
  if (!types || (types.k === "f16" && types.v === "f16")) return {};
  return {
    experimentalKvCacheKeyType: GGML_TYPES[types.k],
    experimentalKvCacheValueType: GGML_TYPES[types.v],
    ...(types.v !== "f16" ? { flashAttention: true } : {}),
  };
}

/** "q8_0/q8_0": how the start-up line, the model's details and the prefix cache's key name the types. */
export function describeKvCacheTypes(types: KvCacheTypes | undefined): string {
  return `${types?.k ?? "f16"}/${types?.v ?? "f16"}`;
}

/**
 * Bytes the types save against an f16 cache of the same context, by node-llama-cpp's estimate for both (the same
 * estimate the context's own memory figure is); 0 for f16/f16.
 */
export async function kvCacheSaving(model: LlamaModel, context: LlamaContext, types: KvCacheTypes | undefined): Promise<number> {
  if (describeKvCacheTypes(types) === "f16/f16") return 0;
  const estimate = (k: GgmlType, v: GgmlType) => model.fileInsights.estimateContextResourceRequirementsV2({
    contextSize: context.contextSize, sequences: context.totalSequences, modelGpuLayers: model.gpuLayers, batchSize: context.batchSize,
    flashAttention: context.flashAttention, kvCacheKeyType: k, kvCacheValueType: v,
  });
  const [f16, chosen] = await Promise.all([estimate(GgmlType.F16, GgmlType.F16), estimate(GGML_TYPES[types!.k], GGML_TYPES[types!.v])]);
  return Math.max(0, f16.cpuRam + f16.gpuVram - (chosen.cpuRam + chosen.gpuVram));
}
