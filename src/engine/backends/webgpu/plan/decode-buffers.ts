/** The decode plan's fixed GPU memory: activations, the per-layer KV cache, the RoPE table, the step uniform. */
import type { LlamaConfig } from "../model/llama-config.js";
import { argmaxChunks } from "../kernels/argmax.js";
import { kvBytesPerValue, type KvCacheType } from "../kernels/kv-cache-wgsl.js";
import { buildRopeTable } from "../kernels/rope.js";
import { createStorage, createUniform } from "../kernels/run-kernel.js";
import { STEP_BYTES } from "../kernels/step.js";

/** Buffers allocated once at load; per token nothing is created. */
export interface DecodeBuffers {
  step: GPUBuffer;
  /** token[0]: the input id of the next step; argmax writes the sampled id here (GPU feedback). */
  token: GPUBuffer;
  /** The residual stream, [d]. */
  x: GPUBuffer;
  /** The next GEMV's normed input: x̂ from a norm dispatch, or g⊙x when the norm is fused (see DecodePlanOptions). */
  normed: GPUBuffer;
  /** Fused norms: Σx² per chunk of x (4 or 8 values), written with g⊙x by the kernel that wrote x. */
  sums: GPUBuffer;
  /** [q | k | v] of the current token. */
  qkv: GPUBuffer;
  /** Attention output, [heads · headDim]. */
  attn: GPUBuffer;
  /** SwiGLU output, [ffn]. */
  hidden: GPUBuffer;
  /** Softmaxed scores, [heads][maxCtx]. */
  scores: GPUBuffer;
  logits: GPUBuffer;
  /** Argmax stage-1 results. */
  partial: GPUBuffer;
  /** Per layer, [kvHeads][maxCtx][headDim] f32. */
  keys: GPUBuffer[];
  values: GPUBuffer[];
  ropeTable: GPUBuffer;
  /** MAP_READ buffer the token id is copied to. */
  tokenStaging: GPUBuffer;
}

/** Allocates the decode buffers for a context of `maxCtx` positions. */
export function createDecodeBuffers(device: GPUDevice, config: LlamaConfig, maxCtx: number, kv: KvCacheType = "f32"): DecodeBuffers {
  const f32 = (count: number, label: string) => createStorage(device, count * 4, label);
  const { embedding, heads, kvHeads, headDim, feedForward, vocabSize, layers } = config;
  const cache = (label: string) => Array.from({ length: layers }, (_, i) => createStorage(device, kvHeads * maxCtx * headDim * kvBytesPerValue(kv), `${label}-${i}`));
  const table = buildRopeTable(maxCtx, headDim, { theta: config.ropeTheta, ropeDim: config.ropeDim, positionScale: config.ropeScale });
  return {
    step: createUniform(device, STEP_BYTES, "step"),
    token: createStorage(device, 16, "token"),
    x: f32(embedding, "x"),
    normed: f32(embedding, "normed"),
    sums: f32(Math.ceil(embedding / 4), "norm-sums"),
    qkv: f32((heads + 2 * kvHeads) * headDim, "qkv"),
    attn: f32(heads * headDim, "attn"),
    hidden: f32(feedForward, "hidden"),
    scores: f32(heads * maxCtx, "scores"),
    logits: f32(vocabSize, "logits"),
    partial: createStorage(device, argmaxChunks(vocabSize) * 8, "argmax-partial"),
    keys: cache("keys"),
    values: cache("values"),
    ropeTable: createStorage(device, table, "rope-table"),
    tokenStaging: device.createBuffer({ size: 16, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST, label: "token-staging" }),
  };
}

/** Releases every buffer. */
export function destroyDecodeBuffers(buffers: DecodeBuffers): void {
  for (const value of Object.values(buffers)) {
    for (const buffer of Array.isArray(value) ? value : [value]) (buffer as GPUBuffer).destroy();
  }
}
