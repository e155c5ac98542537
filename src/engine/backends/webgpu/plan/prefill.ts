/**
 * Batched prompt evaluation: up to `batch` prompt tokens go through each layer together (batched GEMVs that decode
 * each weight block once per tile of tokens, one RoPE + KV write for the batch, causal attention over the cache),
 * filling the KV cache. It computes no logits: the prompt's last token goes through the decode step, which samples.
 * Every pipeline and bind group is built at load; a batch records its dispatches with grids sized to its tokens.
 */
import type { LlamaConfig } from "../model/llama-config.js";
import { createCausalAttention } from "../kernels/causal-attention.js";
import { createEmbed } from "../kernels/dequantize.js";
import { createGemm, gemmInvocations, type GemmOptions } from "../kernels/gemm.js";
import { createRmsNorm } from "../kernels/rms-norm.js";
import { createRopeKv, ropeKvInvocations, type AttentionShape } from "../kernels/rope.js";
import { bindBuffers, createStorage, groupsFor, type BufferRange } from "../kernels/run-kernel.js";
import { encodeStep } from "../kernels/step.js";
import type { DecodeBuffers } from "./decode-buffers.js";
import type { DecodeWeights, GpuMatrix } from "./decode-weights.js";

/** A prebuilt dispatch whose grid depends on the batch's token count. */
interface BatchDispatch {
  pipeline: GPUComputePipeline;
  bindGroup: GPUBindGroup;
  grid(tokens: number): number;
}

export class Prefill {
  private readonly list: BatchDispatch[] = [];
  private readonly buffers: GPUBuffer[] = [];
  private readonly ids: GPUBuffer;

  constructor(
    private readonly device: GPUDevice,
    config: LlamaConfig,
    w: DecodeWeights,
    private readonly shared: DecodeBuffers,
    shape: AttentionShape,
    /** Most tokens per batch. */
    readonly batch: number,
  ) {
    const { embedding: d, heads, kvHeads, headDim, feedForward, rmsEpsilon: eps } = config;
    const qkvRows = (heads + 2 * kvHeads) * headDim;
    const f32 = (count: number, label: string) => this.own(createStorage(device, batch * count * 4, label));
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
    const add = (pipeline: GPUComputePipeline, buffers: BufferRange[], grid: (tokens: number) => number) =>
      this.list.push({ pipeline, bindGroup: bindBuffers(device, pipeline, buffers), grid });
    const gemm = (m: GpuMatrix, options: Omit<GemmOptions, "type">, input: GPUBuffer, output: GPUBuffer, extra: BufferRange[] = [], yStride = m.rows, yOffset = 0) => {
      const pipeline = cached(["gemm", m.type, m.rows, m.cols, options, yStride, yOffset], () => createGemm(device, { ...options, type: m.type, rows: m.rows, cols: m.cols, yStride, yOffset }));
      add(pipeline, [b.step, input, output, ...m.planes, ...extra], (n) => groupsFor(gemmInvocations(m.rows, n)));
    };
    const norm = (gain: BufferRange) => add(cached(["norm"], () => createRmsNorm(device, batch, d, eps)), [x, normed, gain], groupsFor);
    const nb = w.embeddings.cols / 32;
    add(createEmbed(device, w.embeddings.type, w.embeddings.rows, w.embeddings.cols), [{ buffer: this.ids, size: batch * 4 }, x, ...w.embeddings.planes], (n) => groupsFor(n * nb));
    const rope = createRopeKv(device, shape, config.ropeStyle);
    const attention = createCausalAttention(device, shape);
    w.layers.forEach((layer, i) => {
      norm(layer.attnNorm);
      let offset = 0;
      layer.qkv.forEach((m, k) => {
        const bias = layer.qkvBias?.[k];
        gemm(m, { bias: bias !== undefined }, normed, qkv, bias ? [bias] : [], qkvRows, offset);
        offset += m.rows;
      });
      add(rope, [b.step, qkv, b.ropeTable, b.keys[i]!, b.values[i]!], (n) => groupsFor(ropeKvInvocations(shape, config.ropeStyle, n)));
      add(attention, [b.step, qkv, b.keys[i]!, b.values[i]!, attn], (n) => groupsFor(heads * n));
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
      const encoder = this.device.createCommandEncoder();
      const pass = encoder.beginComputePass();
      for (const d of this.list) {
        pass.setPipeline(d.pipeline);
        pass.setBindGroup(0, d.bindGroup);
        pass.dispatchWorkgroups(d.grid(n));
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
