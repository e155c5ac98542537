/**
 * Batched prompt evaluation: up to `batch` prompt tokens go through each layer together (batched GEMVs that decode
 * each weight block once per tile of tokens, one RoPE + KV write for the batch, causal attention over the cache),
 * filling the KV cache. It computes no logits: the prompt's last token goes through the decode step, which samples.
 * Every pipeline and bind group is built at load; a batch records its dispatches with grids sized to its tokens.
 * On a software adapter the GEMMs read their input as uniform windows, one token tile per dispatch (see gemm.ts); on
 * a real GPU they split K over the lanes of each workgroup (gemm-split-k.ts), and attention takes a workgroup per
 * (head, token) (causal-attention.ts).
 */
import type { LlamaConfig } from "../model/llama-config.js";
import { CAUSAL_ATTENTION_LANES, createCausalAttention } from "../kernels/causal-attention.js";
import { createEmbed } from "../kernels/dequantize.js";
import { createGemm, gemmInvocations, gemmWindowBytes, GEMM_ROWS, GEMM_TILE, type GemmOptions } from "../kernels/gemm.js";
import { createSplitKGemm, splitKGrid } from "../kernels/gemm-split-k.js";
import { balancedLaunch } from "../kernels/gemv.js";
import { createRmsNorm } from "../kernels/rms-norm.js";
import { createRopeKv, ropeKvInvocations, type AttentionShape } from "../kernels/rope.js";
import { bindBuffers, createStorage, createUniform, groupsFor, type BufferRange } from "../kernels/run-kernel.js";
import { encodeStep, STEP_BYTES } from "../kernels/step.js";
import type { DecodeBuffers } from "./decode-buffers.js";
import type { DecodeWeights, GpuMatrix } from "./decode-weights.js";

/** A prebuilt dispatch whose grid depends on the batch's token count. */
interface BatchDispatch {
  pipeline: GPUComputePipeline;
  bindGroup: GPUBindGroup;
  grid(tokens: number): number | [x: number, y: number];
  /** A windowed GEMM's first token: dispatched only when the batch reaches it. */
  first?: number;
}

/**
 * Tokens of a windowed GEMM's tile (each weight block is decoded once for them; a multiple of GEMM_TILE, so the tile
 * step uniforms serve it). A window too wide for one uniform binding is split into 2, 4 or 8 bindings.
 */
const WINDOW_TILE = 16;

/** Uniform bindings a `cols`-wide window of WINDOW_TILE tokens needs (a power of two), or undefined where too many. */
function windowParts(limits: GPUSupportedLimits, cols: number): number | undefined {
  const parts = [1, 2, 4, 8].find((p) => gemmWindowBytes(cols, WINDOW_TILE / p) <= limits.maxUniformBufferBindingSize);
  return parts !== undefined && parts < limits.maxUniformBuffersPerShaderStage ? parts : undefined;
}

/** Options of the prefill plan. */
export interface PrefillOptions {
  /** Most tokens per batch. */
  batch: number;
  /**
   * Read GEMM inputs as uniform windows, spreading each over this many CPU threads: the portable kernels for
   * software adapters, which DecodePlan sets it for. Without it (a real GPU) each GEMM splits K over the lanes of a
   * workgroup instead, and attention runs a workgroup per (head, token).
   */
  windowThreads?: number;
}

export class Prefill {
  private readonly list: BatchDispatch[] = [];
  private readonly buffers: GPUBuffer[] = [];
  private readonly ids: GPUBuffer;
  /** Per GEMM_TILE tokens, the step uniform with `first` set (windowed GEMMs only). */
  private readonly tileSteps: GPUBuffer[] = [];
  /** Most tokens per batch. */
  readonly batch: number;

  constructor(
    private readonly device: GPUDevice,
    config: LlamaConfig,
    w: DecodeWeights,
    private readonly shared: DecodeBuffers,
    shape: AttentionShape,
    prefill: PrefillOptions,
  ) {
    const { embedding: d, heads, kvHeads, headDim, feedForward, rmsEpsilon: eps } = config;
    const qkvRows = (heads + 2 * kvHeads) * headDim;
    const batch = (this.batch = prefill.batch);
    const windowed = prefill.windowThreads !== undefined;
    if (windowed) for (let k = 0; k < Math.ceil(batch / GEMM_TILE); k++) this.tileSteps.push(this.own(createUniform(device, STEP_BYTES, "prefill-tile-step")));
    // Whole tiles of rows, so every tile's window lies inside the buffer.
    const rows = Math.ceil(batch / WINDOW_TILE) * WINDOW_TILE;
    const f32 = (count: number, label: string) => this.own(createStorage(device, rows * count * 4, label, windowed ? GPUBufferUsage.UNIFORM : 0));
    this.ids = this.own(createStorage(device, batch * 4, "prefill-ids"));
    const x = f32(d, "prefill-x");
    const normed = f32(d, "prefill-normed");
    const qkv = f32(qkvRows, "prefill-qkv");
    const attn = f32(heads * headDim, "prefill-attn");
    const hidden = f32(feedForward, "prefill-hidden");
    const b = shared;
    const pipelines = new Map<string, GPUComputePipeline>();
    const cached = (key: unknown[], make: () => GPUComputePipeline) => {
      const k = JSON.stringify(key);
      if (!pipelines.has(k)) pipelines.set(k, make());
      return pipelines.get(k)!;
    };
    const add = (pipeline: GPUComputePipeline, buffers: BufferRange[], grid: BatchDispatch["grid"]) =>
      this.list.push({ pipeline, bindGroup: bindBuffers(device, pipeline, buffers), grid });
    const gemm = (m: GpuMatrix, options: Omit<GemmOptions, "type">, input: GPUBuffer, output: GPUBuffer, extra: BufferRange[] = [], yStride = m.rows, yOffset = 0) => {
      const matrix = { type: m.type, rows: m.rows, cols: m.cols, yStride, yOffset };
      if (!windowed) {
        const pipeline = cached(["gemm-split-k", options, matrix], () => createSplitKGemm(device, { ...options, ...matrix }));
        return add(pipeline, [b.step, input, output, ...m.planes, ...extra], (n) => splitKGrid(m.rows, n));
      }
      // A window too wide for the uniform limits falls back to the portable kernel reading storage.
      const parts = windowParts(device.limits, m.cols);
      const launch = parts ? balancedLaunch(Math.ceil(m.rows / GEMM_ROWS), prefill.windowThreads) : undefined;
      const window = parts && launch ? { cols: m.cols, tokens: WINDOW_TILE, workgroupSize: launch.workgroupSize, parts } : undefined;
      const pipeline = cached(["gemm", options, matrix, window], () => createGemm(device, { ...options, ...matrix, window }));
      if (!window || !launch) return add(pipeline, [b.step, input, output, ...m.planes, ...extra], (n) => groupsFor(gemmInvocations(m.rows, n)));
      const partTokens = WINDOW_TILE / window.parts;
      const bytes = gemmWindowBytes(m.cols, partTokens);
      for (let first = 0; first < batch; first += WINDOW_TILE) {
        const [x, ...rest] = Array.from({ length: window.parts }, (_, p) => ({ buffer: input, offset: (first + p * partTokens) * m.cols * 4, size: bytes }));
        const bindGroup = bindBuffers(device, pipeline, [this.tileSteps[first / GEMM_TILE]!, x!, output, ...m.planes, ...extra, ...rest]);
        this.list.push({ pipeline, bindGroup, grid: () => launch.workgroups, first });
      }
    };
    const norm = (gain: BufferRange) => add(cached(["norm"], () => createRmsNorm(device, batch, d, eps)), [x, normed, gain], groupsFor);
    const nb = w.embeddings.cols / 32;
    add(createEmbed(device, w.embeddings.type, w.embeddings.rows, w.embeddings.cols), [{ buffer: this.ids, size: batch * 4 }, x, ...w.embeddings.planes], (n) => groupsFor(n * nb));
    const rope = createRopeKv(device, shape, w.ropeStyle);
    const attentionLanes = windowed ? undefined : CAUSAL_ATTENTION_LANES;
    const attention = createCausalAttention(device, shape, attentionLanes);
    w.layers.forEach((layer, i) => {
      norm(layer.attnNorm);
      let offset = 0;
      layer.qkv.forEach((m, k) => {
        const bias = layer.qkvBias && { buffer: layer.qkvBias.buffer, offset: layer.qkvBias.offset + offset * 4, size: m.rows * 4 };
        gemm(m, { bias: bias !== undefined }, normed, qkv, bias ? [bias] : [], qkvRows, offset);
        offset += m.rows;
      });
      add(rope, [b.step, qkv, b.ropeTable, b.keys[i]!, b.values[i]!], (n) => groupsFor(ropeKvInvocations(shape, w.ropeStyle, n)));
      add(attention, [b.step, qkv, b.keys[i]!, b.values[i]!, attn], (n) => (attentionLanes ? [heads, n] : groupsFor(heads * n)));
      gemm(layer.o, { epilogue: "residual" }, attn, x);
      norm(layer.ffnNorm);
      gemm(layer.gate, { epilogue: "swiglu" }, normed, hidden, layer.up.planes);
      gemm(layer.down, { epilogue: "residual" }, hidden, x);
    });
  }

  /** Dispatches per batch. */
  get dispatchCount(): number {
    return this.list.length;
  }

  /** Submits the evaluation of `tokens` at positions `pos`, `pos + 1`, … (in batches); the queue orders the rest. */
  submit(tokens: readonly number[], pos: number): void {
    const { queue } = this.device;
    for (let from = 0; from < tokens.length; from += this.batch) {
      const n = Math.min(this.batch, tokens.length - from);
      queue.writeBuffer(this.ids, 0, Uint32Array.from(tokens.slice(from, from + n)));
      queue.writeBuffer(this.shared.step, 0, encodeStep(pos + from, n));
      this.tileSteps.forEach((step, tile) => queue.writeBuffer(step, 0, encodeStep(pos + from, n, tile * GEMM_TILE)));
      const encoder = this.device.createCommandEncoder();
      const pass = encoder.beginComputePass();
      for (const d of this.list) {
        if (d.first !== undefined && d.first >= n) continue;
        pass.setPipeline(d.pipeline);
        pass.setBindGroup(0, d.bindGroup);
        const grid = d.grid(n);
        if (typeof grid === "number") pass.dispatchWorkgroups(grid);
        else pass.dispatchWorkgroups(...grid);
      }
      pass.end();
      queue.submit([encoder.finish()]);
    }
  }

  destroy(): void {
    for (const buffer of this.buffers) buffer.destroy();
  }

  private own(buffer: GPUBuffer): GPUBuffer {
    this.buffers.push(buffer);
    return buffer;
  }
}
