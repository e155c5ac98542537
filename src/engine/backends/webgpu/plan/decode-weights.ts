/**
 * Uploads a llama GGUF's weights for the decode plan: matrices repacked to planar ranges in the arena, norm
 * gains as f32. Reads one tensor at a time, so host memory peaks at about one tensor.
 */
import { EngineError } from "../../../../errors/engine-error.js";
import { dequantize } from "../gguf/codecs.js";
import { repackPlanar, type PlanarTensor } from "../gguf/planar.js";
import { GgmlType, typeName } from "../gguf/quant-types.js";
import { readTensor, type GgufTensorFile } from "../gguf/read-tensors.js";
import type { LlamaConfig } from "../model/llama-config.js";
import { weightPlanes } from "../kernels/quant-wgsl.js";
import type { RopeStyle } from "../kernels/rope.js";
import type { ArenaRange, WeightArena } from "./weight-arena.js";

/** A matrix on the GPU: its planes as arena ranges, in the order the kernels bind them. */
export interface GpuMatrix {
  type: GgmlType;
  rows: number;
  cols: number;
  planes: ArenaRange[];
}

/** One block's weights. `qkv` is one matrix (q, k, v rows stacked) when the three share a type, else three. */
export interface DecodeLayerWeights {
  attnNorm: ArenaRange;
  qkv: GpuMatrix[];
  /** qwen2: the biases of q, k and v, stacked in one range (q|k|v, like the rows). */
  qkvBias?: ArenaRange;
  o: GpuMatrix;
  ffnNorm: ArenaRange;
  gate: GpuMatrix;
  up: GpuMatrix;
  down: GpuMatrix;
}

/** Everything the decode plan binds. */
export interface DecodeWeights {
  embeddings: GpuMatrix;
  layers: DecodeLayerWeights[];
  outputNorm: ArenaRange;
  /**
   * The LM head: output.weight, or the embeddings again when they are tied, in row shards when one binding cannot
   * hold it (Qwen2.5's 151936 × 896 Q8_0 head is 136 MB; bindings stop at 128 MiB).
   */
  output: GpuMatrix[];
  /**
   * How the uploaded q/k rows pair for RoPE. NEOX models (pairs i, i + D/2) are uploaded with each head's q/k rows
   * (and biases) interleaved so those pairs sit side by side: then NORM pairing applies, and the QKV GEMV can rotate
   * a pair in the registers of one invocation. Dot products q·k do not change under the same row order on both.
   */
  ropeStyle: RopeStyle;
}

/** Upload choices. */
export interface UploadOptions {
  /** Stack q, k, v into one matrix when they share a type (default true; false exercises the split path). */
  stackQkv?: boolean;
  /** Largest LM-head shard in bytes (default: the adapter's binding limit; smaller exercises the sharded head). */
  shardBytes?: number;
}

/** Reads, repacks and uploads every tensor of a llama model. */
export async function uploadDecodeWeights(file: GgufTensorFile, config: LlamaConfig, arena: WeightArena, options: UploadOptions = {}): Promise<DecodeWeights> {
  const planar = async (name: string) => toPlanar(await readTensor(file, name));
  const matrix = async (name: string) => uploadMatrix(arena, await planar(name), name);
  const vector = async (name: string) => {
    const t = await readTensor(file, name);
    return dequantize(t.type, t.bytes, t.rows * t.cols);
  };
  const gain = async (name: string) => arena.add(await vector(name), name);
  const embeddings = await matrix("token_embd.weight");
  const layers: DecodeLayerWeights[] = [];
  for (let i = 0; i < config.layers; i++) {
    const b = `blk.${i}`;
    const neox = config.ropeStyle === "neox";
    const pairUp = (t: PlanarTensor, k: number) => (neox && k < 2 ? interleaveHalves(t, config.headDim) : t);
    const qkv = (await Promise.all(["attn_q", "attn_k", "attn_v"].map((n) => planar(`${b}.${n}.weight`)))).map(pairUp);
    const stack = options.stackQkv !== false && qkv.every((t) => t.type === qkv[0]!.type);
    const biases = config.attentionBias ? await Promise.all(["q", "k", "v"].map(async (n, k) => {
      const bias = await vector(`${b}.attn_${n}.bias`);
      return neox && k < 2 ? interleaveHalves(bias, config.headDim) : bias;
    })) : undefined;
    layers.push({
      attnNorm: await gain(`${b}.attn_norm.weight`),
      qkv: stack ? [uploadMatrix(arena, stackRows(qkv), `${b}.qkv`)] : qkv.map((t, k) => uploadMatrix(arena, t, `${b}.qkv${k}`)),
      qkvBias: biases && arena.add(concatFloats(biases), `${b}.qkv.bias`),
      o: await matrix(`${b}.attn_output.weight`),
      ffnNorm: await gain(`${b}.ffn_norm.weight`),
      gate: await matrix(`${b}.ffn_gate.weight`),
      up: await matrix(`${b}.ffn_up.weight`),
      down: await matrix(`${b}.ffn_down.weight`),
    });
  }
  const outputNorm = await gain("output_norm.weight");
  const output = config.tiedEmbeddings ? [embeddings] : rowShards(await planar("output.weight"), options.shardBytes ?? arena.maxBinding).map((shard, k) => uploadMatrix(arena, shard, `output.${k}`));
  return { embeddings, layers, outputNorm, output, ropeStyle: "norm" };
}

/**
 * Fails before anything is uploaded when a matrix has a type the kernels cannot read, naming the tensor and the type
 * (checked from the header alone).
 */
export function checkWeightTypes(file: GgufTensorFile): void {
  for (const t of file.header.tensors) if (t.dims.length >= 2) checkWeightType(t.name, t.type);
}

function checkWeightType(name: string, type: GgmlType): void {
  try {
    weightPlanes(type);
  } catch {
    const message = `cannot load on the webgpu backend: tensor ${name} is ${typeName(type)}, which it cannot run yet (F32, F16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K and Q6_K can)`;
    throw new EngineError("backend_failure", message, { tensor: name, type: typeName(type) });
  }
}

function toPlanar(t: { name: string; type: GgmlType; rows: number; cols: number; bytes: Uint8Array }): PlanarTensor {
  if (t.cols % 32 !== 0) throw new EngineError("invalid_request", `tensor ${t.name} has rows of ${t.cols}, not a multiple of 32`);
  checkWeightType(t.name, t.type);
  return repackPlanar(t.type, t.bytes, t.rows, t.cols);
}

function uploadMatrix(arena: WeightArena, t: PlanarTensor, name: string): GpuMatrix {
  return { type: t.type, rows: t.rows, cols: t.cols, planes: weightPlanes(t.type).map((plane) => arena.add(t[plane], `${name}.${plane}`)) };
}

function concatFloats(parts: Float32Array[]): Float32Array {
  const out = new Float32Array(parts.reduce((n, p) => n + p.length, 0));
  parts.reduce((at, p) => (out.set(p, at), at + p.length), 0);
  return out;
}

/**
 * Splits a matrix into row ranges whose planes each fit in `maxBytes`. Shards hold a multiple of 64 rows, so each
 * one's outputs start at a 256-byte aligned offset of the output buffer.
 */
export function rowShards(t: PlanarTensor, maxBytes: number): PlanarTensor[] {
  const planes = (["quants", "meta", "high"] as const).filter((p) => t[p].length > 0);
  const rowBytes = Math.max(...planes.map((p) => (t[p].byteLength / t.rows)));
  if (rowBytes * t.rows <= maxBytes) return [t];
  const perShard = Math.floor(maxBytes / rowBytes / 64) * 64;
  const shards: PlanarTensor[] = [];
  for (let row = 0; row < t.rows; row += perShard) {
    const rows = Math.min(perShard, t.rows - row);
    const slice = (p: "quants" | "meta" | "high") => {
      const words = t[p].length / t.rows;
      return t[p].subarray(row * words, (row + rows) * words);
    };
    shards.push({ type: t.type, rows, cols: t.cols, quants: slice("quants"), meta: slice("meta"), high: slice("high") });
  }
  return shards;
}

/**
 * Reorders each head's rows (of a planar matrix, or a vector of one value per row) from [0 … D/2−1, D/2 … D−1] to
 * [0, D/2, 1, D/2+1, …]: NEOX's rotation pairs become adjacent rows, as NORM's are.
 */
export function interleaveHalves<T extends PlanarTensor | Float32Array>(t: T, headDim: number): T {
  const half = headDim / 2;
  const source = (row: number) => row - (row % headDim) + ((row % 2) * half) + Math.floor((row % headDim) / 2);
  const permute = <A extends Uint32Array | Float32Array>(a: A, rows: number): A => {
    const width = a.length / rows;
    const out = new (a.constructor as new (n: number) => A)(a.length);
    for (let row = 0; row < rows; row++) out.set(a.subarray(source(row) * width, (source(row) + 1) * width), row * width);
    return out;
  };
  if (t instanceof Float32Array) return permute(t, t.length) as T;
  return { ...t, quants: permute(t.quants, t.rows), meta: permute(t.meta, t.rows), high: permute(t.high, t.rows) };
}

/** Planar block order is row-major, so stacking matrices of one type is concatenating each plane. */
function stackRows(tensors: PlanarTensor[]): PlanarTensor {
  const concat = (plane: "quants" | "meta" | "high") => {
    const out = new Uint32Array(tensors.reduce((n, t) => n + t[plane].length, 0));
    let at = 0;
    for (const t of tensors) {
      out.set(t[plane], at);
      at += t[plane].length;
    }
    return out;
  };
  const rows = tensors.reduce((n, t) => n + t.rows, 0);
  return { type: tensors[0]!.type, rows, cols: tensors[0]!.cols, quants: concat("quants"), meta: concat("meta"), high: concat("high") };
}
