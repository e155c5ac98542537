/**
 * Writes a tiny, valid GGUF model: llama (or qwen2) architecture, 2 layers of small random F32 weights (deterministic from a
 * seed), a byte-level BPE vocabulary with <|im_start|>, <|im_end|> and <|endoftext|>, and a ChatML template.
 * Its output is noise, but it loads and generates, so plumbing tests stay fast and need no download.
 * Options pick another tensor type (quantized as llama.cpp's reference quantizers do), another shape, a larger
 * LM-head scale (so logits have clear margins) and tied embeddings.
 */
import { writeFile } from "node:fs/promises";
import { GgufType } from "../../src/gguf/read-gguf-header.js";
import { encodeGguf, type GgufEncodedTensorInput, type GgufEntry, type GgufTensorInput } from "../../src/gguf/encode-gguf.js";
import { quantize } from "../../src/engine/backends/webgpu/gguf/codecs.js";
import { GgmlType } from "../../src/engine/backends/webgpu/gguf/quant-types.js";
import { seededRandom } from "../../src/lib/seeded-random.js";

/** The shape of the tiny model. */
export const TINY = { embedding: 64, heads: 4, kvHeads: 2, layers: 2, feedForward: 128, contextLength: 512 } as const;

/** A model shape (the tiny one unless overridden). Row lengths must be multiples of 32 for quantized types. */
export type TinyShape = { -readonly [K in keyof typeof TINY]: number };

/** Tensor types a tiny model can be written in (1-D norm weights stay F32, as llama.cpp keeps them). */
export type TinyTensorType = "f32" | "f16" | "q4_0" | "q4_1" | "q5_0" | "q5_1" | "q8_0" | "q4_k" | "q5_k" | "q6_k";

/** How to vary the tiny model; every field is optional and the defaults give the original F32 model. */
export interface TinyGgufOptions {
  /** Type of every 2-D weight tensor (default f32). */
  type?: TinyTensorType;
  /** Overrides of the shape. */
  shape?: Partial<TinyShape>;
  /** Weights of every other matrix are uniform in ±weightScale/2 (default 0.2); larger makes attention sharper. */
  weightScale?: number;
  /** Weights of the LM head are uniform in ±outputScale/2 (default: weightScale); larger widens logit margins. */
  outputScale?: number;
  /** Norm weights drawn in [0.8, 1.2) instead of all ones, so a norm weight applied wrongly shows. */
  randomNorms?: boolean;
  /** Leave out output.weight, so the LM head reuses token_embd (which then gets `outputScale`). */
  tied?: boolean;
  /** Per-tensor types by short name ("ffn_down", "attn_v", "output", "token_embd"), as Q4_K_M files mix them. */
  overrides?: Record<string, TinyTensorType>;
  /**
   * Write a `qwen2` model: biases on q, k and v (random, so a bias applied wrongly shows), NEOX RoPE with
   * freq_base 1e6 and ε 1e-6, as Qwen2.5 files have them.
   */
  qwen2?: boolean;
}

const GGML_TYPES: Record<TinyTensorType, { type: GgmlType; fileType: number }> = {
  f32: { type: GgmlType.F32, fileType: 0 },
  f16: { type: GgmlType.F16, fileType: 1 },
  q4_0: { type: GgmlType.Q4_0, fileType: 2 },
  q4_1: { type: GgmlType.Q4_1, fileType: 3 },
  q8_0: { type: GgmlType.Q8_0, fileType: 7 },
  q5_0: { type: GgmlType.Q5_0, fileType: 8 },
  q5_1: { type: GgmlType.Q5_1, fileType: 9 },
  q4_k: { type: GgmlType.Q4_K, fileType: 15 },
  q5_k: { type: GgmlType.Q5_K, fileType: 17 },
  q6_k: { type: GgmlType.Q6_K, fileType: 18 },
};

/** ChatML, as SmolLM2 and Qwen use it. */
export const CHATML_TEMPLATE =
  "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}" +
  "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

const SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"];
const MERGES = ["h e", "l l", "Ġ t", "Ġt he"];
/** Token count: the 256 byte tokens, the special tokens, one per merge. */
export const TINY_VOCABULARY_SIZE = 256 + SPECIAL_TOKENS.length + MERGES.length;
/** The id of the end-of-text token, `<|im_end|>` (after the 256 byte tokens and the other specials). */
export const TINY_EOS_TOKEN = 256 + SPECIAL_TOKENS.indexOf("<|im_end|>");
const NORMAL = 1;
const CONTROL = 3;

/** The tiny model's file bytes for a seed (same seed and options, same bytes). */
export function tinyGgufBytes(seed = 1, options: TinyGgufOptions = {}): Buffer {
  const tokens = [...byteTokens(), ...SPECIAL_TOKENS, ...MERGES.map((m) => m.replace(" ", ""))];
  const shape = { ...TINY, ...options.shape };
  const { type, fileType } = GGML_TYPES[options.type ?? "f32"];
  const typeOf = (name: string) => {
    const override = options.overrides?.[name.replace(/^blk\.\d+\./, "").replace(/\.weight$/, "")];
    return override ? GGML_TYPES[override].type : type;
  };
  const list = tensors(shape, tokens.length, mulberry32(seed), options).map((t) => encodeTensor(t, typeOf(t.name)));
  return encodeGguf(metadata(tokens, shape, fileType, options.qwen2 ? "qwen2" : "llama"), list);
}

/** Writes the tiny model to `path`; returns the path. */
export async function writeTinyGguf(path: string, seed = 1, options: TinyGgufOptions = {}): Promise<string> {
  await writeFile(path, tinyGgufBytes(seed, options));
  return path;
}

/** Element count of every tensor the tiny model has, for tests that check the parameter count. */
export function tinyParameterCount(shape: TinyShape = TINY, tied = false): number {
  const vocab = TINY_VOCABULARY_SIZE;
  const { embedding: e, kvHeads, heads, layers, feedForward: ff } = shape;
  const kv = (e / heads) * kvHeads;
  return (tied ? 1 : 2) * e * vocab + e + layers * (2 * e + 2 * e * e + 2 * e * kv + 3 * e * ff);
}

/** Quantizes a 2-D tensor to `type`; 1-D tensors (norm weights) stay F32. */
function encodeTensor(tensor: GgufTensorInput, type: GgmlType): GgufTensorInput | GgufEncodedTensorInput {
  if (type === GgmlType.F32 || tensor.dims.length < 2) return tensor;
  return { name: tensor.name, dims: tensor.dims, type, bytes: quantize(type, tensor.data) };
}

function metadata(tokens: string[], shape: TinyShape, fileType: number, arch: string): GgufEntry[] {
  const { embedding, heads, kvHeads, layers, feedForward, contextLength } = shape;
  const u32 = (key: string, value: number): GgufEntry => ({ key, type: GgufType.UINT32, value });
  const special = (t: string) => tokens.indexOf(t);
  return [
    { key: "general.architecture", type: GgufType.STRING, value: arch },
    { key: "general.name", type: GgufType.STRING, value: "kiln tiny test model" },
    u32("general.file_type", fileType),
    u32(`${arch}.context_length`, contextLength),
    u32(`${arch}.embedding_length`, embedding),
    u32(`${arch}.block_count`, layers),
    u32(`${arch}.feed_forward_length`, feedForward),
    u32(`${arch}.attention.head_count`, heads),
    u32(`${arch}.attention.head_count_kv`, kvHeads),
    u32(`${arch}.rope.dimension_count`, embedding / heads),
    u32(`${arch}.vocab_size`, tokens.length),
    { key: `${arch}.rope.freq_base`, type: GgufType.FLOAT32, value: arch === "qwen2" ? 1e6 : 10000 },
    { key: `${arch}.attention.layer_norm_rms_epsilon`, type: GgufType.FLOAT32, value: arch === "qwen2" ? 1e-6 : 1e-5 },
    { key: "tokenizer.ggml.model", type: GgufType.STRING, value: "gpt2" },
    { key: "tokenizer.ggml.pre", type: GgufType.STRING, value: "default" },
    { key: "tokenizer.ggml.tokens", type: GgufType.ARRAY, itemType: GgufType.STRING, value: tokens },
    { key: "tokenizer.ggml.token_type", type: GgufType.ARRAY, itemType: GgufType.INT32, value: tokens.map((t) => (SPECIAL_TOKENS.includes(t) ? CONTROL : NORMAL)) },
    { key: "tokenizer.ggml.merges", type: GgufType.ARRAY, itemType: GgufType.STRING, value: MERGES },
    u32("tokenizer.ggml.bos_token_id", special("<|endoftext|>")),
    u32("tokenizer.ggml.eos_token_id", special("<|im_end|>")),
    u32("tokenizer.ggml.padding_token_id", special("<|endoftext|>")),
    { key: "tokenizer.ggml.add_bos_token", type: GgufType.BOOL, value: false },
    { key: "tokenizer.chat_template", type: GgufType.STRING, value: CHATML_TEMPLATE },
  ];
}

function tensors(shape: TinyShape, vocab: number, random: () => number, options: TinyGgufOptions): GgufTensorInput[] {
  const { embedding: e, heads, kvHeads, layers, feedForward: ff } = shape;
  const kv = (e / heads) * kvHeads;
  const weights = (name: string, dims: number[], scale = options.weightScale ?? 0.2): GgufTensorInput => {
    const data = new Float32Array(dims.reduce((a, b) => a * b, 1));
    for (let i = 0; i < data.length; i++) data[i] = (random() - 0.5) * scale;
    return { name, dims, data };
  };
  const norm = (name: string): GgufTensorInput => {
    const data = options.randomNorms ? Float32Array.from({ length: e }, () => 0.8 + random() * 0.4) : new Float32Array(e).fill(1);
    return { name, dims: [e], data };
  };
  const headScale = options.outputScale ?? options.weightScale ?? 0.2;
  const list = options.tied
    ? [weights("token_embd.weight", [e, vocab], headScale), norm("output_norm.weight")]
    : [weights("token_embd.weight", [e, vocab]), norm("output_norm.weight"), weights("output.weight", [e, vocab], headScale)];
  for (let i = 0; i < layers; i++) {
    const b = `blk.${i}`;
    list.push(
      norm(`${b}.attn_norm.weight`), weights(`${b}.attn_q.weight`, [e, e]), weights(`${b}.attn_k.weight`, [e, kv]),
      weights(`${b}.attn_v.weight`, [e, kv]), weights(`${b}.attn_output.weight`, [e, e]), norm(`${b}.ffn_norm.weight`),
      weights(`${b}.ffn_gate.weight`, [e, ff]), weights(`${b}.ffn_up.weight`, [e, ff]), weights(`${b}.ffn_down.weight`, [ff, e]),
    );
    if (options.qwen2) list.push(weights(`${b}.attn_q.bias`, [e], 1), weights(`${b}.attn_k.bias`, [kv], 1), weights(`${b}.attn_v.bias`, [kv], 1));
  }
  return list;
}

/** GPT-2's byte-level alphabet: each byte as the printable character its BPE vocabulary uses for it. */
function byteTokens(): string[] {
  const printable = (b: number) => (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
  let next = 256;
  return Array.from({ length: 256 }, (_, b) => String.fromCodePoint(printable(b) ? b : next++));
}

/** The seeded generator the weights come from (same seed, same weights); kept under its old name for tests. */
export const mulberry32 = seededRandom;
