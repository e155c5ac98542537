/**
 * The golden model for the WebGPU backend: a plain float64 llama forward pass over a GGUF's dequantized weights.
 * It decodes one token at a time with a KV cache, like llama.cpp's graph for LLM_ARCH_LLAMA: RMSNorm, NORM RoPE
 * (adjacent pairs 2i, 2i+1), grouped-query attention, SwiGLU, and the LM head on token_embd when output.weight
 * is absent; for LLM_ARCH_QWEN2, q/k/v biases and NEOX RoPE (i with i + headDim/2). Slow and simple on purpose; use it on tiny fixtures. An optional `GgmlParity` (ggml-parity.ts) adds
 * llama.cpp's CPU rounding, for comparisons with llama.cpp; the default is exact math, for comparisons with ours.
 */
import { dequantize } from "../../src/engine/backends/webgpu/gguf/codecs.js";
import { fromHalfBits, roundToHalf } from "../../src/engine/backends/webgpu/gguf/half.js";
import { GgmlType, blockInfo } from "../../src/engine/backends/webgpu/gguf/quant-types.js";
import { openGgufTensors, readTensor, type GgufTensorFile } from "../../src/engine/backends/webgpu/gguf/read-tensors.js";
import { readLlamaConfig, type LlamaConfig } from "../../src/engine/backends/webgpu/model/llama-config.js";
import { blockSumCorrection, ggmlRopeTable, roundLikeGgmlQ8, type GgmlParity, type Rotation } from "./ggml-parity.js";

/** A weight matrix of `rows` outputs, each a row of `cols` inputs (ggml's ne[1] × ne[0]). */
export interface Matrix {
  /** The type the file stores it in (the values below are already dequantized). */
  type: GgmlType;
  rows: number;
  cols: number;
  /** Dequantized values (float32 holds them exactly); all math on them is float64. */
  data: Float32Array;
  /** Q4_1/Q5_1: each 32-block's m (parity mode needs it apart, see roundLikeGgmlQ8). */
  mins?: Float32Array;
}

/** One transformer block's weights. */
export interface ReferenceLayer {
  attnNorm: Float32Array;
  q: Matrix;
  k: Matrix;
  v: Matrix;
  o: Matrix;
  /** qwen2's q, k and v biases. */
  bias?: { q: Float32Array; k: Float32Array; v: Float32Array };
  ffnNorm: Float32Array;
  gate: Matrix;
  up: Matrix;
  down: Matrix;
}

/** A llama model loaded for the reference pass. */
export interface ReferenceModel {
  config: LlamaConfig;
  embeddings: Matrix;
  layers: ReferenceLayer[];
  outputNorm: Float32Array;
  /** The LM head: output.weight, or token_embd itself when the embeddings are tied. */
  output: Matrix;
}

/** What one decode step produced. */
export interface ReferenceStep {
  /** The residual stream after each layer (index 0 = after layer 0). */
  residuals: Float64Array[];
  logits: Float64Array;
}

/** A decode session: feed tokens one at a time; the KV cache grows with each. */
export interface ReferenceSession {
  step(token: number): ReferenceStep;
  /** Tokens fed so far. */
  readonly position: number;
}

/** Loads and dequantizes every tensor of a llama GGUF. */
export async function loadReferenceModel(path: string): Promise<ReferenceModel> {
  const file = await openGgufTensors(path);
  const config = readLlamaConfig(file.header);
  const embeddings = await readMatrix(file, "token_embd.weight");
  const layers: ReferenceLayer[] = [];
  for (let i = 0; i < config.layers; i++) {
    const matrix = (name: string) => readMatrix(file, `blk.${i}.${name}.weight`);
    const bias = async (name: string) => (await readMatrix(file, `blk.${i}.attn_${name}.bias`)).data;
    layers.push({
      bias: config.attentionBias ? { q: await bias("q"), k: await bias("k"), v: await bias("v") } : undefined,
      attnNorm: (await matrix("attn_norm")).data, q: await matrix("attn_q"), k: await matrix("attn_k"), v: await matrix("attn_v"),
      o: await matrix("attn_output"), ffnNorm: (await matrix("ffn_norm")).data, gate: await matrix("ffn_gate"),
      up: await matrix("ffn_up"), down: await matrix("ffn_down"),
    });
  }
  const outputNorm = (await readMatrix(file, "output_norm.weight")).data;
  const output = config.tiedEmbeddings ? embeddings : await readMatrix(file, "output.weight");
  return { config, embeddings, layers, outputNorm, output };
}

/** Runs `tokens` through a fresh session and returns every step (logits at each position). */
export function runReference(model: ReferenceModel, tokens: readonly number[], parity: GgmlParity = {}): ReferenceStep[] {
  const session = createReferenceSession(model, parity);
  return tokens.map((token) => session.step(token));
}

/** Starts a decode session with an empty KV cache. */
export function createReferenceSession(model: ReferenceModel, parity: GgmlParity = {}): ReferenceSession {
  const { config } = model;
  const ops = operations(parity);
  const cache: KvCache[] = model.layers.map(() => ({ keys: [], values: [] }));
  const rope = parity.f32Rope ? ggmlRopeTable(config) : ropeTable(config);
  let position = 0;
  return {
    get position() {
      return position;
    },
    step(token: number): ReferenceStep {
      if (token < 0 || token >= model.embeddings.rows) throw new RangeError(`token ${token} is outside the vocabulary`);
      const x = Float64Array.from(model.embeddings.data.subarray(token * config.embedding, (token + 1) * config.embedding));
      const residuals = model.layers.map((layer, i) => {
        addInPlace(x, attention(ops, layer, rmsNorm(x, layer.attnNorm, config.rmsEpsilon), cache[i]!, rope(position), config));
        addInPlace(x, feedForward(ops, layer, rmsNorm(x, layer.ffnNorm, config.rmsEpsilon)));
        return Float64Array.from(x);
      });
      position++;
      return { residuals, logits: ops.matVec(model.output, rmsNorm(x, model.outputNorm, config.rmsEpsilon)) };
    },
  };
}

/** Index of the largest value; ties go to the lowest index, as llama.cpp's greedy sampler does. */
export function argmax(values: ArrayLike<number>): number {
  let best = 0;
  for (let i = 1; i < values.length; i++) if (values[i]! > values[best]!) best = i;
  return best;
}

/** Softmax in float64. */
export function softmax(logits: ArrayLike<number>): Float64Array {
  let max = -Infinity;
  for (let i = 0; i < logits.length; i++) max = Math.max(max, logits[i]!);
  const exps = Float64Array.from(logits, (v) => Math.exp(v - max));
  const sum = exps.reduce((a, b) => a + b, 0);
  return exps.map((v) => v / sum);
}

async function readMatrix(file: GgufTensorFile, name: string): Promise<Matrix> {
  const tensor = await readTensor(file, name);
  const data = dequantize(tensor.type, tensor.bytes, tensor.rows * tensor.cols);
  if (tensor.type !== GgmlType.Q4_1 && tensor.type !== GgmlType.Q5_1) return { type: tensor.type, rows: tensor.rows, cols: tensor.cols, data };
  const { bytes: blockBytes } = blockInfo(tensor.type);
  const view = new DataView(tensor.bytes.buffer, tensor.bytes.byteOffset);
  const mins = Float32Array.from({ length: data.length / 32 }, (_, b) => fromHalfBits(view.getUint16(b * blockBytes + 2, true)));
  return { type: tensor.type, rows: tensor.rows, cols: tensor.cols, data, mins };
}

/** The math that parity mode changes: matmuls, and what the KV cache and attention products see. */
interface Operations {
  matVec(matrix: Matrix, x: Float64Array): Float64Array;
  /** What the f16-vs-f32 KV cache (and the matmuls against it) make of a vector. */
  cached(x: Float64Array): Float64Array;
}

function operations(parity: GgmlParity): Operations {
  const half = (x: Float64Array) => x.map(roundToHalf);
  const quantizedMatVec = (matrix: Matrix, x: Float64Array) => {
    const { values, sums } = roundLikeGgmlQ8(x);
    const out = matVec(matrix, values);
    // ggml adds m·s with s = the block's sum kept in f16; the dequantized weights gave m·Σ(values) instead.
    if (matrix.mins) for (let r = 0; r < matrix.rows; r++) out[r]! += blockSumCorrection(matrix.mins, r * (matrix.cols / 32), values, sums);
    return out;
  };
  return {
    matVec: (matrix, x) => {
      if (!parity.activations || matrix.type === GgmlType.F32) return matVec(matrix, x);
      return matrix.type === GgmlType.F16 ? matVec(matrix, half(x)) : quantizedMatVec(matrix, x);
    },
    cached: parity.f16Cache ? half : (x) => x,
  };
}

function attention(ops: Operations, layer: ReferenceLayer, xn: Float64Array, cache: KvCache, rotation: Rotation, config: LlamaConfig): Float64Array {
  const { heads, kvHeads, headDim } = config;
  const project = (m: Matrix, bias: Float32Array | undefined) => {
    const y = ops.matVec(m, xn);
    if (bias) addInPlace(y, Float64Array.from(bias));
    return y;
  };
  const rawQ = project(layer.q, layer.bias?.q);
  const k = project(layer.k, layer.bias?.k);
  const pairing = config.ropeStyle === "neox" ? rotateNeox : rotate;
  for (let h = 0; h < heads; h++) pairing(rawQ, h * headDim, rotation);
  for (let h = 0; h < kvHeads; h++) pairing(k, h * headDim, rotation);
  const q = ops.cached(rawQ);
  cache.keys.push(ops.cached(k));
  cache.values.push(ops.cached(project(layer.v, layer.bias?.v)));
  const out = new Float64Array(heads * headDim);
  const group = heads / kvHeads;
  const scale = 1 / Math.sqrt(headDim);
  for (let h = 0; h < heads; h++) {
    // Grouped-query attention: query heads h = g·group … g·group + group − 1 share kv head g (ggml's broadcast).
    const kvAt = Math.floor(h / group) * headDim;
    const scores = cache.keys.map((key) => dot(q, h * headDim, key, kvAt, headDim) * scale);
    const weights = ops.cached(softmax(scores));
    cache.values.forEach((value, t) => {
      for (let j = 0; j < headDim; j++) out[h * headDim + j]! += weights[t]! * value[kvAt + j]!;
    });
  }
  return ops.matVec(layer.o, out);
}

function feedForward(ops: Operations, layer: ReferenceLayer, xn: Float64Array): Float64Array {
  const gate = ops.matVec(layer.gate, xn);
  const up = ops.matVec(layer.up, xn);
  const hidden = gate.map((g, i) => (g / (1 + Math.exp(-g))) * up[i]!);
  return ops.matVec(layer.down, hidden);
}

function rmsNorm(x: Float64Array, weight: Float32Array, epsilon: number): Float64Array {
  const meanSquare = x.reduce((sum, v) => sum + v * v, 0) / x.length;
  const scale = 1 / Math.sqrt(meanSquare + epsilon);
  return x.map((v, i) => v * scale * weight[i]!);
}

function matVec(matrix: Matrix, x: Float64Array): Float64Array {
  if (x.length !== matrix.cols) throw new RangeError(`a ${matrix.rows}×${matrix.cols} matrix cannot take ${x.length} inputs`);
  const out = new Float64Array(matrix.rows);
  for (let r = 0; r < matrix.rows; r++) {
    let sum = 0;
    const at = r * matrix.cols;
    for (let c = 0; c < matrix.cols; c++) sum += matrix.data[at + c]! * x[c]!;
    out[r] = sum;
  }
  return out;
}

function dot(a: Float64Array, aAt: number, b: Float64Array, bAt: number, length: number): number {
  let sum = 0;
  for (let i = 0; i < length; i++) sum += a[aAt + i]! * b[bAt + i]!;
  return sum;
}

function addInPlace(x: Float64Array, delta: Float64Array): void {
  for (let i = 0; i < x.length; i++) x[i]! += delta[i]!;
}

/** One layer's cached keys and values, one vector per position. */
interface KvCache {
  keys: Float64Array[];
  values: Float64Array[];
}

/** θ_i = (pos / scale) · base^(−2i / ropeDim), for pairs i < ropeDim / 2 (ggml's rope cache). */
function ropeTable(config: LlamaConfig): (position: number) => Rotation {
  const pairs = config.ropeDim / 2;
  return (position) => {
    const angles = Float64Array.from({ length: pairs }, (_, i) => (position / config.ropeScale) * config.ropeTheta ** ((-2 * i) / config.ropeDim));
    return { cos: angles.map(Math.cos), sin: angles.map(Math.sin) };
  };
}

/** NORM RoPE: rotates the adjacent pairs (2i, 2i+1) of one head in place; dims past ropeDim stay as they are. */
function rotate(vector: Float64Array, at: number, { cos, sin }: Rotation): void {
  for (let i = 0; i < cos.length; i++) {
    const a = vector[at + 2 * i]!;
    const b = vector[at + 2 * i + 1]!;
    vector[at + 2 * i] = a * cos[i]! - b * sin[i]!;
    vector[at + 2 * i + 1] = a * sin[i]! + b * cos[i]!;
  }
}

/** NEOX RoPE: rotates dim i with dim i + ropeDim/2 of one head in place (qwen2). */
function rotateNeox(vector: Float64Array, at: number, { cos, sin }: Rotation): void {
  const half = cos.length;
  for (let i = 0; i < half; i++) {
    const a = vector[at + i]!;
    const b = vector[at + i + half]!;
    vector[at + i] = a * cos[i]! - b * sin[i]!;
    vector[at + i + half] = a * sin[i]! + b * cos[i]!;
  }
}
