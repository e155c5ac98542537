/**
 * Builds the per-token dispatch list of a llama decode step once, at load: every pipeline and bind group exists
 * before the first token, so a step only records setPipeline / setBindGroup / dispatchWorkgroups.
 */
import { EngineError } from "../../../../errors/engine-error.js";
import type { LlamaConfig } from "../model/llama-config.js";
import { argmaxChunks, createArgmax } from "../kernels/argmax.js";
import { createAttention } from "../kernels/attention.js";
import { createEmbed } from "../kernels/dequantize.js";
import { createGemv, gemvLaunch, type GemvOptions } from "../kernels/gemv.js";
import type { KvCacheType } from "../kernels/kv-cache-wgsl.js";
import { createRmsNorm } from "../kernels/rms-norm.js";
import { createRopeKv, ropeKvInvocations, type AttentionShape, type RopeStyle } from "../kernels/rope.js";
import { bindBuffers, groupsFor, type BufferRange, type Dispatch } from "../kernels/run-kernel.js";
import type { DecodeBuffers } from "./decode-buffers.js";
import type { DecodeLayerWeights, DecodeWeights, GpuMatrix } from "./decode-weights.js";

/** A prebuilt dispatch and its kernel class (what a profile groups timings by). */
export interface PlannedDispatch extends Dispatch {
  kind: string;
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
  /**
   * Most lanes a GEMV splits K over (a workgroup per row group; GPUs, where the plan asks for 64). Each GEMV takes
   * the largest power of two up to this that K's 32-blocks fill. Default 1: one invocation per row group.
   */
  gemvLanes?: number;
  /**
   * The adapter's fixed subgroup size (GPUs that offer subgroups): a GEMV with at least this many lanes sums them
   * with subgroupAdd instead of a tree in workgroup memory.
   */
  subgroupSize?: number;
  /**
   * Attention as the prologue of the O projection (software adapters: one dispatch less per layer, and llvmpipe
   * pays more for a barrier-heavy kernel than for the attention of a short context), instead of its own dispatch
   * with a workgroup per head (default).
   */
  attentionPrologue?: boolean;
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
  const lanesFor = (m: { rows: number; cols: number }, choice: Omit<GemvOptions, "type">) => {
    const most = choice.attend ? 1 : Math.min(options.gemvLanes ?? 1, m.cols / 32);
    const lanes = 2 ** Math.floor(Math.log2(Math.max(1, most)));
    // One workgroup per row group must fit the grid's one dimension (a large unsharded LM head may not).
    return m.rows / rowsPerInvocation > device.limits.maxComputeWorkgroupsPerDimension ? 1 : lanes;
  };
  const list: PlannedDispatch[] = [];
  const add = (kind: string, pipeline: GPUComputePipeline, buffers: BufferRange[], workgroups: number) =>
    list.push({ kind, pipeline, bindGroup: bindBuffers(device, pipeline, buffers), workgroups });
  /**
   * A GEMV dispatch (its pipeline shared by GEMVs of the same shape and options): bindings before W's planes (x, y,
   * [sums]), the planes, and what the options bind after them.
   */
  const addGemv = (kind: string, m: GpuMatrix, choice: Omit<GemvOptions, "type">, before: BufferRange[], planes: BufferRange[] = m.planes, after: BufferRange[] = []) => {
    const lanes = lanesFor(m, choice);
    const subgroupSize = options.subgroupSize && lanes > 1 && lanes >= options.subgroupSize ? options.subgroupSize : undefined;
    const { workgroupSize, workgroups } = gemvLaunch(m.rows, { rowsPerInvocation, lanes, threads: options.threads });
    const key = JSON.stringify([m.type, m.rows, m.cols, choice]);
    if (!pipelines.has(key)) pipelines.set(key, createGemv(device, { ...choice, rowsPerInvocation, lanes, subgroupSize, workgroupSize, type: m.type, rows: m.rows, cols: m.cols, eps, attention: shape }));
    add(kind, pipelines.get(key)!, [...before, ...planes, ...after], workgroups);
  };

  const fuseNorm = options.fuseNorm === true;
  const rmsNorm = lazily(() => createRmsNorm(device, 1, d, eps));
  /**
   * The input of a GEMV after an RMSNorm, always in `normed`: g⊙x, which the kernel that wrote x prepared with the
   * partial sums the GEMV binds after y (fused), or x̂ from a norm dispatch.
   */
  const prenorm = (gain: BufferRange): { norm: boolean; input: BufferRange[] } => {
    if (!fuseNorm) add("rms-norm", rmsNorm(), [b.x, b.normed, gain], 1);
    return { norm: fuseNorm, input: [b.normed] };
  };
  const withSums = (n: { norm: boolean }) => (n.norm ? [b.sums] : []);
  /** What a kernel writing x binds to prepare the next norm with gain g (fused only). */
  const normNext = (gain: BufferRange) => (fuseNorm ? [gain, b.normed, b.sums] : []);

  const embed = createEmbed(device, w.embeddings.type, w.embeddings.rows, w.embeddings.cols, fuseNorm ? rowsPerInvocation : undefined);
  add("embed", embed, [{ buffer: b.token, offset: 0, size: 4 }, b.x, ...w.embeddings.planes, ...normNext(w.layers[0]!.attnNorm)], groupsFor(d / 32));
  const ropeKv = lazily(() => createRopeKv(device, shape, w.ropeStyle));
  const attention = lazily(() => createAttention(device, shape));
  const caches = (i: number) => [b.step, b.ropeTable, b.keys[i]!, b.values[i]!];
  const layerEnds: number[] = [];
  w.layers.forEach((layer, i) => {
    const attnIn = prenorm(layer.attnNorm);
    const bias = layer.qkvBias ? [layer.qkvBias] : [];
    if (fusesQkv(device, layer, w.ropeStyle, headDim, rowsPerInvocation, attnIn.norm)) {
      // One GEMV over q|k|v (one matrix, or one per type) with the bias, RoPE and KV-write epilogue.
      const [first, ...rest] = layer.qkv;
      const parts = rest.length ? layer.qkv.map((m) => ({ type: m.type, rows: m.rows })) : undefined;
      const m = { ...first!, rows: layer.qkv.reduce((n, q) => n + q.rows, 0) };
      const planes = layer.qkv.flatMap((q) => q.planes);
      addGemv("qkv-rope", m, { norm: attnIn.norm, epilogue: "rope-kv", bias: bias.length > 0, parts }, [...attnIn.input, b.qkv, ...withSums(attnIn)], planes, [...bias, ...caches(i)]);
    } else {
      let offset = 0;
      layer.qkv.forEach((m) => {
        const range = layer.qkvBias && { buffer: layer.qkvBias.buffer, offset: layer.qkvBias.offset + offset, size: m.rows * 4 };
        addGemv("qkv", m, { norm: attnIn.norm, bias: range !== undefined }, [...attnIn.input, rangeOf(device, b.qkv, offset, m.rows * 4), ...withSums(attnIn)], m.planes, range ? [range] : []);
        offset += m.rows * 4;
      });
      add("rope-kv", ropeKv(), [b.step, b.qkv, b.ropeTable, b.keys[i]!, b.values[i]!], groupsFor(ropeKvInvocations(shape, w.ropeStyle)));
    }
    const q = { buffer: b.qkv, offset: 0, size: heads * headDim * 4 };
    // The prologue holds the whole attention output in workgroup memory.
    if (options.attentionPrologue && heads * headDim * 4 <= device.limits.maxComputeWorkgroupStorageSize) {
      addGemv("attention-o-residual", layer.o, { epilogue: "residual", normNext: fuseNorm, attend: true }, [q, b.x], layer.o.planes, [b.step, b.keys[i]!, b.values[i]!, ...normNext(layer.ffnNorm)]);
    } else {
      add("attention", attention(), [b.step, q, b.keys[i]!, b.values[i]!, b.scores, b.attn], heads);
      addGemv("o-residual", layer.o, { epilogue: "residual", normNext: fuseNorm }, [b.attn, b.x], layer.o.planes, normNext(layer.ffnNorm));
    }
    if (layer.gate.type !== layer.up.type || layer.gate.rows !== feedForward) {
      throw new EngineError("invalid_request", `layer ${i}: ffn_gate and ffn_up must share a type for the fused SwiGLU kernel`);
    }
    const ffnIn = prenorm(layer.ffnNorm);
    addGemv("gate-up-swiglu", layer.gate, { norm: ffnIn.norm, epilogue: "swiglu" }, [...ffnIn.input, b.hidden, ...withSums(ffnIn)], [...layer.gate.planes, ...layer.up.planes]);
    const nextGain = w.layers[i + 1]?.attnNorm ?? w.outputNorm;
    addGemv("down-residual", layer.down, { epilogue: "residual", normNext: fuseNorm }, [b.hidden, b.x], layer.down.planes, normNext(nextGain));
    layerEnds.push(list.length - 1);
  });
  const outIn = prenorm(w.outputNorm);
  let row = 0;
  for (const shard of w.output) {
    addGemv("lm-head", shard, { norm: outIn.norm }, [...outIn.input, rangeOf(device, b.logits, row * 4, shard.rows * 4), ...withSums(outIn)]);
    row += shard.rows;
  }
  const argmax = createArgmax(device, row);
  add("argmax", argmax.chunks, [b.logits, b.partial], groupsFor(argmaxChunks(row)));
  add("argmax", argmax.finish, [b.partial, b.token], 1);
  return { list, layerEnds };
}

/**
 * Whether q, k and v go through one GEMV with the RoPE + KV epilogue: NORM pairs (adjacent rows), whole vec4 rows,
 * matrix boundaries on invocation boundaries, and few enough storage bindings for the adapter.
 */
function fusesQkv(device: GPUDevice, layer: DecodeLayerWeights, ropeStyle: RopeStyle, headDim: number, rowsPerInvocation: number, norm: boolean): boolean {
  if (ropeStyle !== "norm" || headDim % 4 !== 0 || layer.qkv.some((m) => m.rows % rowsPerInvocation !== 0)) return false;
  // x, y, [sums], the planes, [bias], table, k cache, v cache (the step is a uniform).
  const storage = 2 + (norm ? 1 : 0) + layer.qkv.reduce((n, m) => n + m.planes.length, 0) + (layer.qkvBias ? 1 : 0) + 3;
  return storage <= device.limits.maxStorageBuffersPerShaderStage;
}

/** A sub-range of an output buffer; q, k and v of mixed types write theirs at aligned offsets. */
function rangeOf(device: GPUDevice, buffer: GPUBuffer, offset: number, size: number): BufferRange {
  if (offset % device.limits.minStorageBufferOffsetAlignment !== 0) {
    throw new EngineError("invalid_request", `q/k/v of different types need row offsets aligned to ${device.limits.minStorageBufferOffsetAlignment} bytes`);
  }
  return { buffer, offset, size };
}

/** Compiles on first use: some kernels serve only some plans (the separate RoPE, norm and attention kernels). */
function lazily<T>(make: () => T): () => T {
  let value: T | undefined;
  return () => (value ??= make());
}
