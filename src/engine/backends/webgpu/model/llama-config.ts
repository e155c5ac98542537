/**
 * The hyperparameters of a llama-family GGUF (llama, qwen2), read from its metadata with llama.cpp's defaults where a key is
 * optional. Keys: https://github.com/ggml-org/ggml/blob/master/docs/gguf.md#llm
 */
import { EngineError } from "../../../../errors/engine-error.js";
import type { GgufHeader, GgufValue } from "../../../../gguf/read-gguf-header.js";

/** What the forward pass needs to know about a llama model. */
export interface LlamaConfig {
  /** `general.architecture` ("llama" or "qwen2"). */
  architecture: string;
  layers: number;
  /** Embedding width d (residual stream size). */
  embedding: number;
  heads: number;
  kvHeads: number;
  /** Width of one attention head (key_length, else d / heads). */
  headDim: number;
  feedForward: number;
  vocabSize: number;
  rmsEpsilon: number;
  ropeTheta: number;
  /** Leading dimensions of each head that RoPE rotates (usually headDim). */
  ropeDim: number;
  /** Linear RoPE scaling: positions are divided by this (1 without scaling). */
  ropeScale: number;
  /**
   * Which dims RoPE pairs: "norm" rotates adjacent pairs (2i, 2i+1) (llama: the converter permuted Q/K for it),
   * "neox" pairs i with i + headDim/2 (qwen2), as llama.cpp's llama_model_rope_type says.
   */
  ropeStyle: "norm" | "neox";
  /** q, k and v have bias vectors (qwen2). */
  attentionBias: boolean;
  /** True when there is no `output.weight` and the LM head reuses `token_embd.weight`. */
  tiedEmbeddings: boolean;
  /** The context length the model was trained with. */
  contextLength: number;
  bosTokenId: number | null;
  eosTokenId: number | null;
}

/** Architectures that share llama's graph, with their RoPE pairing (qwen2 adds q/k/v biases, found by tensor name). */
const LLAMA_LIKE: Record<string, LlamaConfig["ropeStyle"]> = { llama: "norm", qwen2: "neox" };

/** Reads the llama hyperparameters; throws invalid_request for another architecture or a missing key. */
export function readLlamaConfig(header: GgufHeader): LlamaConfig {
  const meta = header.metadata;
  const architecture = String(meta["general.architecture"] ?? "");
  const ropeStyle = LLAMA_LIKE[architecture];
  if (!ropeStyle) {
    const message = `the webgpu backend runs llama and qwen2 models; this file's architecture is "${architecture || "unknown"}" (use the llama-cpp backend for it)`;
    throw new EngineError("invalid_request", message, { architecture });
  }
  const key = (name: string) => `${architecture}.${name}`;
  const embedding = required(meta, key("embedding_length"));
  const heads = required(meta, key("attention.head_count"));
  const headDim = optional(meta, key("attention.key_length")) ?? embedding / heads;
  const names = new Set(header.tensors.map((t) => t.name));
  const ropeDim = optional(meta, key("rope.dimension_count")) ?? headDim;
  if (ropeStyle === "neox" && ropeDim !== headDim) throw new EngineError("invalid_request", `the webgpu backend's NEOX RoPE rotates whole heads; this model rotates ${ropeDim} of ${headDim} dims`);
  return {
    architecture,
    layers: required(meta, key("block_count")),
    embedding,
    heads,
    kvHeads: optional(meta, key("attention.head_count_kv")) ?? heads,
    headDim,
    feedForward: required(meta, key("feed_forward_length")),
    vocabSize: vocabSizeOf(header, key("vocab_size")),
    rmsEpsilon: required(meta, key("attention.layer_norm_rms_epsilon")),
    ropeTheta: optional(meta, key("rope.freq_base")) ?? 10000,
    ropeDim,
    ropeScale: ropeScaleOf(meta, key),
    ropeStyle,
    attentionBias: names.has("blk.0.attn_q.bias"),
    tiedEmbeddings: !names.has("output.weight"),
    contextLength: required(meta, key("context_length")),
    bosTokenId: optional(meta, "tokenizer.ggml.bos_token_id") ?? null,
    eosTokenId: optional(meta, "tokenizer.ggml.eos_token_id") ?? null,
  };
}

function optional(meta: Record<string, GgufValue>, name: string): number | undefined {
  const value = meta[name];
  return typeof value === "number" ? value : undefined;
}

function required(meta: Record<string, GgufValue>, name: string): number {
  const value = optional(meta, name);
  if (value === undefined) throw new EngineError("invalid_request", `the model file lacks the metadata key ${name}`);
  return value;
}

/** The vocabulary size: the explicit key, else the token list's length, else token_embd's row count. */
function vocabSizeOf(header: GgufHeader, name: string): number {
  const explicit = optional(header.metadata, name);
  if (explicit !== undefined) return explicit;
  const tokens = header.metadata["tokenizer.ggml.tokens"];
  if (Array.isArray(tokens)) return tokens.length;
  if (tokens && typeof tokens === "object" && "length" in tokens) return tokens.length;
  const embed = header.tensors.find((t) => t.name === "token_embd.weight");
  if (embed?.dims[1] !== undefined) return embed.dims[1];
  throw new EngineError("invalid_request", "the model file states no vocabulary size");
}

/** llama.cpp's linear scaling: `rope.scaling.factor` (or the older `rope.scale_linear`) divides positions. */
function ropeScaleOf(meta: Record<string, GgufValue>, key: (name: string) => string): number {
  const type = meta[key("rope.scaling.type")];
  if (type !== undefined && type !== "linear" && type !== "none") {
    throw new EngineError("invalid_request", `the webgpu backend does not support ${String(type)} RoPE scaling yet`);
  }
  if (type === "none") return 1;
  return optional(meta, key("rope.scaling.factor")) ?? optional(meta, key("rope.scale_linear")) ?? 1;
}
