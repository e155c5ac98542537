/**
 * Builds the per-token dispatch list of a llama decode step once, at load: every pipeline and bind group exists
 * before the first token, so a step only records setPipeline / setBindGroup / dispatchWorkgroups.
 */
import { EngineError } from "../../../../errors/engine-error.js";
import type { LlamaConfig } from "../model/llama-config.js";
import { argmaxChunks, createArgmax } from "../kernels/argmax.js";
import { createAttention } from "../kernels/attention.js";
import { createEmbed } from "../kernels/dequantize.js";
import { balancedLaunch, createGemv, gemvInvocations, type GemvOptions } from "../kernels/gemv.js";
import type { KvCacheType } from "../kernels/kv-cache-wgsl.js";
import { createRmsNorm } from "../kernels/rms-norm.js";
import { createRopeKv, ropeKvInvocations, type AttentionShape } from "../kernels/rope.js";
import { bindBuffers, groupsFor, type BufferRange, type Dispatch } from "../kernels/run-kernel.js";
import type { DecodeBuffers } from "./decode-buffers.js";
import type { DecodeWeights, GpuMatrix } from "./decode-weights.js";

/** A prebuilt dispatch; attention passes scale with the KV length, so their grid is set per token. */
export interface PlannedDispatch extends Dispatch {
  /** When set, the grid is groupsFor(perKvLen · kvLen) instead of `workgroups`. */
  perKvLen?: number;
}

/** The dispatch list, and after which entries a layer ends (for debug dumps of the residual). */
export interface DecodeDispatches {
  list: PlannedDispatch[];
  layerEnds: number[];
}

/** Plan choices. */
export interface DecodePlanOptions {
  /**
   * Fold each RMSNorm into the next GEMV's prologue (fewer dispatches, for adapters where dispatches are dear), or
   * run it as its own dispatch writing x̂ (on llvmpipe the prologue's extra per-block loads cost more than the 61
   * extra dispatches of SmolLM2). DecodePlan picks per adapter.
   */
  fuseNorm?: boolean;
  /** GEMV rows per invocation (default 4; the plan picks 8 on software adapters, where it measured faster). */
  gemvRows?: 4 | 8;
  /** Spread small GEMV grids evenly over this many CPU threads (software adapters; default 1 = plain 64-wide). */
  threads?: number;
  /** KV cache element type: f32 (default, exact against the f64 reference) or f16 (half the memory, llama.cpp's default). */
  kvCache?: KvCacheType;
  /** Prompt tokens per prefill batch (default 64); 1 evaluates prompts token by token with decode steps. */
  prefillBatch?: number;
}

/** Creates the pipelines (shared between layers of one shape) and one bind group per dispatch. */
export function buildDecodeDispatches(device: GPUDevice, config: LlamaConfig, w: DecodeWeights, b: DecodeBuffers, maxCtx: number, options: DecodePlanOptions = {}): DecodeDispatches {
  const { embedding: d, heads, kvHeads, headDim, feedForward, rmsEpsilon: eps } = config;
  const shape: AttentionShape = { heads, kvHeads, headDim, maxCtx, kv: options.kvCache ?? "f32" };
  const pipelines = new Map<string, GPUComputePipeline>();
  const rowsPerInvocation = options.gemvRows ?? 4;
  const launch = (rows: number) => balancedLaunch(gemvInvocations(rows, rowsPerInvocation), options.threads);
  const gemvGroups = (rows: number) => launch(rows).workgroups;
  const gemv = (m: GpuMatrix, choice: Omit<GemvOptions, "type">) => {
    const key = JSON.stringify([m.type, m.rows, m.cols, choice]);
    const { workgroupSize } = launch(m.rows);
    if (!pipelines.has(key)) pipelines.set(key, createGemv(device, { ...choice, rowsPerInvocation, workgroupSize, type: m.type, rows: m.rows, cols: m.cols, eps, attention: shape }));
    return pipelines.get(key)!;
  };
  const list: PlannedDispatch[] = [];
  const add = (pipeline: GPUComputePipeline, buffers: BufferRange[], workgroups: number, perKvLen?: number) =>
    list.push({ pipeline, bindGroup: bindBuffers(device, pipeline, buffers), workgroups, perKvLen });
  const addGemv = (m: GpuMatrix, options: Omit<GemvOptions, "type">, buffers: BufferRange[]) =>
    add(gemv(m, options), [...buffers, ...m.planes], gemvGroups(m.rows));

  const rmsNorm = lazily(() => createRmsNorm(device, 1, d, eps));
  /** The GEMV input for a norm: x with the gain bound for the prologue, or x̂ from a norm dispatch. */
  const prenorm = (gain: BufferRange): { norm: boolean; input: BufferRange[] } => {
    if (options.fuseNorm) return { norm: true, input: [b.x] };
    add(rmsNorm(), [b.x, b.normed, gain], 1);
    return { norm: false, input: [b.normed] };
  };
  const withGain = (n: { norm: boolean }, gain: BufferRange) => (n.norm ? [gain] : []);

  add(createEmbed(device, w.embeddings.type, w.embeddings.rows, w.embeddings.cols), [{ buffer: b.token, offset: 0, size: 4 }, b.x, ...w.embeddings.planes], groupsFor(d / 32));
  const ropeKv = lazily(() => createRopeKv(device, shape, config.ropeStyle));
  const attention = createAttention(device, shape);
  const layerEnds: number[] = [];
  w.layers.forEach((layer, i) => {
    const caches = [b.step, b.ropeTable, b.keys[i]!, b.values[i]!];
    const attnIn = prenorm(layer.attnNorm);
    if (layer.qkv.length === 1 && headDim % 4 === 0 && config.ropeStyle === "norm" && !layer.qkvBias) {
      // One GEMV over q|k|v with the RoPE + KV-write epilogue (NORM pairs are adjacent rows of one invocation).
      const m = layer.qkv[0]!;
      add(gemv(m, { norm: attnIn.norm, epilogue: "rope-kv" }), [...attnIn.input, b.qkv, ...withGain(attnIn, layer.attnNorm), ...m.planes, ...caches], gemvGroups(m.rows));
    } else {
      let offset = 0;
      layer.qkv.forEach((m, k) => {
        const bias = layer.qkvBias?.[k];
        add(gemv(m, { norm: attnIn.norm, bias: bias !== undefined }), [...attnIn.input, rangeOf(device, b.qkv, offset, m.rows * 4), ...withGain(attnIn, layer.attnNorm), ...m.planes, ...(bias ? [bias] : [])], gemvGroups(m.rows));
        offset += m.rows * 4;
      });
      add(ropeKv(), [b.step, b.qkv, b.ropeTable, b.keys[i]!, b.values[i]!], groupsFor(ropeKvInvocations(shape, config.ropeStyle)));
    }
    add(attention.scores, [b.step, { buffer: b.qkv, offset: 0, size: heads * headDim * 4 }, b.keys[i]!, b.scores], 0, kvHeads);
    add(attention.softmax, [b.step, b.scores], groupsFor(heads));
    add(attention.weightedValues, [b.step, b.scores, b.values[i]!, b.attn], groupsFor((heads * headDim) / 4));
    addGemv(layer.o, { epilogue: "residual" }, [b.attn, b.x]);
    if (layer.gate.type !== layer.up.type || layer.gate.rows !== feedForward) {
      throw new EngineError("invalid_request", `layer ${i}: ffn_gate and ffn_up must share a type for the fused SwiGLU kernel`);
    }
    const ffnIn = prenorm(layer.ffnNorm);
    const swiglu = gemv(layer.gate, { norm: ffnIn.norm, epilogue: "swiglu" });
    add(swiglu, [...ffnIn.input, b.hidden, ...withGain(ffnIn, layer.ffnNorm), ...layer.gate.planes, ...layer.up.planes], gemvGroups(feedForward));
    addGemv(layer.down, { epilogue: "residual" }, [b.hidden, b.x]);
    layerEnds.push(list.length - 1);
  });
  const outIn = prenorm(w.outputNorm);
  let row = 0;
  for (const shard of w.output) {
    addGemv(shard, { norm: outIn.norm }, [...outIn.input, rangeOf(device, b.logits, row * 4, shard.rows * 4), ...withGain(outIn, w.outputNorm)]);
    row += shard.rows;
  }
  const argmax = createArgmax(device, row);
  add(argmax.chunks, [b.logits, b.partial], groupsFor(argmaxChunks(row)));
  add(argmax.finish, [b.partial, b.token], 1);
  return { list, layerEnds };
}

/** A sub-range of an output buffer; q, k and v of mixed types write theirs at aligned offsets. */
function rangeOf(device: GPUDevice, buffer: GPUBuffer, offset: number, size: number): BufferRange {
  if (offset % device.limits.minStorageBufferOffsetAlignment !== 0) {
    throw new EngineError("invalid_request", `q/k/v of different types need row offsets aligned to ${device.limits.minStorageBufferOffsetAlignment} bytes`);
  }
  return { buffer, offset, size };
}

/** Compiles on first use: the separate RoPE kernel is only needed when q, k and v cannot take the fused epilogue. */
function lazily<T>(make: () => T): () => T {
  let value: T | undefined;
  return () => (value ??= make());
}
