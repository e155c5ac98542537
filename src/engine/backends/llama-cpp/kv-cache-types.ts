/**
 * The KV cache's element types (llama.cpp's -ctk/-ctv): f16 by default, q8_0 or q4_0 to hold a long context in about
 * half or a third of the memory; and flash attention, which decides how the V half is laid out. llama.cpp can only
 * read a quantized V cache through flash attention, so a quantized V type turns it on.
 */
import { GgmlType, type LlamaContext, type LlamaContextOptions, type LlamaModel } from "node-llama-cpp";
import type { FlashAttentionChoice, KvCacheType, KvCacheTypes } from "../../engine-options.js";

const GGML_TYPES: Record<KvCacheType, GgmlType> = { f16: GgmlType.F16, q8_0: GgmlType.Q8_0, q4_0: GgmlType.Q4_0 };

/** The KV cache settings of a model. */
export interface KvCacheSettings {
  kvCacheTypes?: KvCacheTypes;
  flashAttention?: FlashAttentionChoice;
}

/**
 * The context options for these settings. A context and the prefill lane's context beside it take the same options:
 * a state moved between them keeps its layout.
 */
export function kvCacheContextOptions(settings: KvCacheSettings): Partial<LlamaContextOptions> {
  const types = settings.kvCacheTypes;
  const quantized = types && (types.k !== "f16" || types.v !== "f16");
  const flashAttention = flashAttentionFor(settings.flashAttention, types);
  return {
    ...(flashAttention !== undefined ? { flashAttention } : {}),
    ...(quantized ? { experimentalKvCacheKeyType: GGML_TYPES[types.k], experimentalKvCacheValueType: GGML_TYPES[types.v] } : {}),
  };
}

/**
 * Flash attention for a context: undefined for "auto", which leaves it to node-llama-cpp and llama.cpp (as
 * llama-server's `-fa auto`: on wherever the device runs it, the CPU included, for a model that supports it). On an
 * H100 (Vulkan) it served 32 and 64 streams 1.19–1.29× faster than without; on 2 CPU cores the default model
 * generates up to 9% faster without it near an empty context, while deep prompts are 7–28% faster with it
 * (bench/results/2026-11-27-vm-flash-attention-cpu.md). A quantized V cache can only be read through flash
 * attention, so it turns it on.
 */
export function flashAttentionFor(choice: FlashAttentionChoice | undefined, types: KvCacheTypes | undefined): boolean | undefined {
  if (types && types.v !== "f16") return true;
  if (choice === "on" || choice === "off") return choice === "on";
  return undefined;
}

/** "q8_0/q8_0": how the start-up line, the model's details and the prefix cache's key name the types. */
export function describeKvCacheTypes(types: KvCacheTypes | undefined): string {
  return `${types?.k ?? "f16"}/${types?.v ?? "f16"}`;
}

/** Bytes per element of each type: f16 is 2; q8_0 and q4_0 store blocks of 32 values in 34 and 18 bytes. */
const BYTES_PER_ELEMENT: Record<KvCacheType, number> = { f16: 2, q8_0: 34 / 32, q4_0: 18 / 32 };

/**
 * Bytes of the KV cache for `cells` tokens with these types, from the GGUF's attention shape: every layer keeps a K
 * and a V vector of head_count_kv heads per token. Undefined when the metadata lacks the shape.
 */
export function kvCacheBytes(model: LlamaModel, cells: number, types: KvCacheTypes | undefined): number | undefined {
  const metadata = model.fileInfo.metadata as unknown as Record<string, { block_count?: number; embedding_length?: number; attention?: Record<string, number | undefined> }>;
  const shape = metadata[String(model.fileInfo.metadata.general.architecture)];
  const heads = shape?.attention?.head_count;
  const kvHeads = shape?.attention?.head_count_kv ?? heads;
  if (!shape?.block_count || !shape.embedding_length || !heads || !kvHeads) return undefined;
  const keyLength = shape.attention?.key_length ?? shape.embedding_length / heads;
  const valueLength = shape.attention?.value_length ?? shape.embedding_length / heads;
  const perToken = kvHeads * (keyLength * BYTES_PER_ELEMENT[types?.k ?? "f16"] + valueLength * BYTES_PER_ELEMENT[types?.v ?? "f16"]);
  return Math.round(shape.block_count * cells * perToken);
}

/** The KV cache facts a model's details carry: its types, its bytes, what f16 would take, and flash attention. */
export function describeKvCache(model: LlamaModel, context: LlamaContext, types: KvCacheTypes | undefined): Record<string, unknown> {
  const cells = context.contextSize * context.totalSequences;
  return {
    kvCacheTypes: describeKvCacheTypes(types), kvCacheBytes: kvCacheBytes(model, cells, types), kvCacheF16Bytes: kvCacheBytes(model, cells, undefined),
    flashAttention: context.flashAttention,
  };
}
