/**
 * Writes a tiny, valid GGUF model: llama architecture, 2 layers of small random F32 weights (deterministic from a
 * seed), a byte-level BPE vocabulary with <|im_start|>, <|im_end|> and <|endoftext|>, and a ChatML template.
 * Its output is noise, but it loads and generates, so plumbing tests stay fast and need no download.
 */
import { writeFile } from "node:fs/promises";
import { GgufType } from "../../src/models/gguf.js";
import { encodeGguf, type GgufEntry, type GgufTensorInput } from "../../src/models/gguf-write.js";

/** The shape of the tiny model. */
export const TINY = { embedding: 64, heads: 4, kvHeads: 2, layers: 2, feedForward: 128, contextLength: 512 } as const;

/** ChatML, as SmolLM2 and Qwen use it. */
export const CHATML_TEMPLATE =
  "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}" +
  "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

const SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"];
const MERGES = ["h e", "l l", "Ġ t", "Ġt he"];
/** Token count: the 256 byte tokens, the special tokens, one per merge. */
export const TINY_VOCABULARY_SIZE = 256 + SPECIAL_TOKENS.length + MERGES.length;
const NORMAL = 1;
const CONTROL = 3;

/** The tiny model's file bytes for a seed (same seed, same bytes). */
export function tinyGgufBytes(seed = 1): Buffer {
  const tokens = [...byteTokens(), ...SPECIAL_TOKENS, ...MERGES.map((m) => m.replace(" ", ""))];
  return encodeGguf(metadata(tokens), tensors(tokens.length, mulberry32(seed)));
}

/** Writes the tiny model to `path`; returns the path. */
export async function writeTinyGguf(path: string, seed = 1): Promise<string> {
  await writeFile(path, tinyGgufBytes(seed));
  return path;
}

/** Element count of every tensor the tiny model has, for tests that check the parameter count. */
export function tinyParameterCount(): number {
  const vocab = TINY_VOCABULARY_SIZE;
  const { embedding: e, kvHeads, heads, layers, feedForward: ff } = TINY;
  const kv = (e / heads) * kvHeads;
  return 2 * e * vocab + e + layers * (2 * e + 2 * e * e + 2 * e * kv + 3 * e * ff);
}

function metadata(tokens: string[]): GgufEntry[] {
  const { embedding, heads, kvHeads, layers, feedForward, contextLength } = TINY;
  const u32 = (key: string, value: number): GgufEntry => ({ key, type: GgufType.UINT32, value });
  const special = (t: string) => tokens.indexOf(t);
  return [
    { key: "general.architecture", type: GgufType.STRING, value: "llama" },
    { key: "general.name", type: GgufType.STRING, value: "kiln tiny test model" },
    u32("general.file_type", 0),
    u32("llama.context_length", contextLength),
    u32("llama.embedding_length", embedding),
    u32("llama.block_count", layers),
    u32("llama.feed_forward_length", feedForward),
    u32("llama.attention.head_count", heads),
    u32("llama.attention.head_count_kv", kvHeads),
    u32("llama.rope.dimension_count", embedding / heads),
    u32("llama.vocab_size", tokens.length),
    { key: "llama.rope.freq_base", type: GgufType.FLOAT32, value: 10000 },
    { key: "llama.attention.layer_norm_rms_epsilon", type: GgufType.FLOAT32, value: 1e-5 },
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

function tensors(vocab: number, random: () => number): GgufTensorInput[] {
  const { embedding: e, heads, kvHeads, layers, feedForward: ff } = TINY;
  const kv = (e / heads) * kvHeads;
  const weights = (name: string, dims: number[]): GgufTensorInput => {
    const data = new Float32Array(dims.reduce((a, b) => a * b, 1));
    for (let i = 0; i < data.length; i++) data[i] = (random() - 0.5) * 0.2;
    return { name, dims, data };
  };
  const ones = (name: string): GgufTensorInput => ({ name, dims: [e], data: new Float32Array(e).fill(1) });
  const list = [weights("token_embd.weight", [e, vocab]), ones("output_norm.weight"), weights("output.weight", [e, vocab])];
  for (let i = 0; i < layers; i++) {
    const b = `blk.${i}`;
    list.push(
      ones(`${b}.attn_norm.weight`), weights(`${b}.attn_q.weight`, [e, e]), weights(`${b}.attn_k.weight`, [e, kv]),
      weights(`${b}.attn_v.weight`, [e, kv]), weights(`${b}.attn_output.weight`, [e, e]), ones(`${b}.ffn_norm.weight`),
      weights(`${b}.ffn_gate.weight`, [e, ff]), weights(`${b}.ffn_up.weight`, [e, ff]), weights(`${b}.ffn_down.weight`, [ff, e]),
    );
  }
  return list;
}

/** GPT-2's byte-level alphabet: each byte as the printable character its BPE vocabulary uses for it. */
function byteTokens(): string[] {
  const printable = (b: number) => (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
  let next = 256;
  return Array.from({ length: 256 }, (_, b) => String.fromCodePoint(printable(b) ? b : next++));
}

/** A small seeded PRNG (mulberry32): same seed, same weights. */
function mulberry32(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
