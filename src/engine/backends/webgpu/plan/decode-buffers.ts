/**
 * The decode plan's fixed GPU memory: activations and the step uniform it owns, and the KV cache and RoPE table of its
 * slot in the model's arena (kv-arena.ts), which it binds but does not own.
 */
import type { LlamaConfig } from "../model/llama-config.js";
import { argmaxChunks } from "../kernels/argmax.js";
import { createStorage, createUniform, type BufferRange } from "../kernels/run-kernel.js";
import { STEP_BYTES } from "../kernels/step.js";
import type { SlotCaches } from "./kv-arena.js";

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
  /** Per layer, this sequence's [kvHeads][positions][headDim] (the arena's). */
  keys: BufferRange[];
  values: BufferRange[];
  /** The arena's. */
  ropeTable: GPUBuffer;
  /** MAP_READ buffer the token id is copied to. */
  tokenStaging: GPUBuffer;
}

/** Allocates the decode buffers of one sequence whose cache is `caches`. */
export function createDecodeBuffers(device: GPUDevice, config: LlamaConfig, caches: SlotCaches): DecodeBuffers {
  const f32 = (count: number, label: string) => createStorage(device, count * 4, label);
  const { embedding, heads, kvHeads, headDim, feedForward, vocabSize } = config;
  return {
    step: createUniform(device, STEP_BYTES, "step"),
    token: createStorage(device, 16, "token"),
    x: f32(embedding, "x"),
    normed: f32(embedding, "normed"),
    sums: f32(Math.ceil(embedding / 4), "norm-sums"),
    qkv: f32((heads + 2 * kvHeads) * headDim, "qkv"),
    attn: f32(heads * headDim, "attn"),
    hidden: f32(feedForward, "hidden"),
    scores: f32(heads * caches.positions, "scores"),
    logits: f32(vocabSize, "logits"),
    partial: createStorage(device, argmaxChunks(vocabSize) * 8, "argmax-partial"),
    keys: caches.keys,
    values: caches.values,
    ropeTable: caches.ropeTable,
    tokenStaging: device.createBuffer({ size: 16, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST, label: "token-staging" }),
  };
}

/** The buffers the plan owns (not the arena's caches and RoPE table). */
export function ownedDecodeBuffers(buffers: DecodeBuffers): GPUBuffer[] {
  const { keys: _keys, values: _values, ropeTable: _table, ...owned } = buffers;
  return Object.values(owned);
}
