/**
 * A batch of tokens through the model, each at its own place (sequence slot, position) of the model's KV arena: up to
 * `batch` tokens go through each layer together (batched GEMVs that decode each weight block once per tile of tokens,
 * one RoPE + KV write for the batch, causal attention of each token over its own sequence's cache). A prompt's chunk
 * is a batch of one sequence's consecutive positions and computes no logits (`submit`); a decode step of several
 * sequences is a batch of one token each, and ends with the LM head and a greedy argmax per token (`decode`), so the
 * weights are read once for all of them. The model's one TokenBatch serves every sequence: the queue orders its
 * submits, and the step batcher (step-batcher.ts) runs one decode at a time.
 * Every pipeline and bind group is built at load; a batch records its dispatches with grids sized to its tokens.
 * On a software adapter the GEMMs read their input as uniform windows, one token tile per dispatch (see gemm.ts); on
 * a real GPU they split K over the lanes of each workgroup (gemm-split-k.ts), and attention and RMSNorm take a
 * workgroup per (head, token) and per token (causal-attention.ts, rms-norm.ts).
 */
import type { LlamaConfig } from "../model/llama-config.js";
import { argmaxChunks, createArgmax } from "../kernels/argmax.js";
import { CAUSAL_ATTENTION_LANES, createCausalAttention } from "../kernels/causal-attention.js";
import { createEmbed } from "../kernels/dequantize.js";
import { createGemm, gemmInvocations, gemmWindowBytes, GEMM_ROWS, GEMM_TILE, type GemmOptions } from "../kernels/gemm.js";
import { createSplitKGemm, GEMM_LANES, splitKGrid } from "../kernels/gemm-split-k.js";
import { balancedLaunch } from "../kernels/gemv.js";
import { createRmsNorm, RMS_NORM_LANES } from "../kernels/rms-norm.js";
import { createRopeKv, ropeKvInvocations, type AttentionShape } from "../kernels/rope.js";
import { bindBuffers, createStorage, createUniform, groupsFor, type BufferRange } from "../kernels/run-kernel.js";
import { candidatesOf, createTopKPlan, encodeTopK, TOP_CANDIDATE_BYTES, type TopKPlan } from "../kernels/top-k.js";
import type { Candidate } from "../sampler.js";
import { encodeStep, STEP_BYTES } from "../kernels/step.js";
import type { StepHostTimes } from "./decode.js";
import type { DecodeWeights, GpuMatrix } from "./decode-weights.js";
import type { KvArena } from "./kv-arena.js";

/** Where a token goes: its sequence's slot in the arena and its position there. */
export type Place = readonly [slot: number, position: number];

/**
 * What a decode step reads back for a token besides its greedy next id: nothing, its whole row of logits, or (on a GPU
 * batch plan) only its TOP_CANDIDATES best, which is all that plain top-k sampling looks at.
 */
export type RowWant = "id" | "logits" | "top";

/** What a decode batch gives back per token: the greedy next id, and the logits or best candidates asked for. */
export interface BatchStep {
  ids: number[];
  logits: Array<Float32Array | undefined>;
  top: Array<Candidate[] | undefined>;
}

/** A prebuilt dispatch whose grid depends on the batch's token count. */
interface BatchDispatch {
  /** Its kernel class (what a profile groups timings by). */
  kind: string;
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

/**
 * Smaller windows for small batches (software adapters): a windowed GEMM computes its whole tile whatever the batch
 * holds, so a decode step of 2 sequences through 16-token windows would do 8 tokens' arithmetic per token, which on a
 * CPU is what the step costs. Batches up to each of these sizes get dispatches with windows of that many tokens.
 */
const SMALL_TILES = [2, 4, 8];

/** Uniform bindings a `cols`-wide window of `tokens` tokens needs (a power of two), or undefined where too many. */
function windowParts(limits: GPUSupportedLimits, cols: number, tokens: number): number | undefined {
  const parts = [1, 2, 4, 8].filter((p) => p <= tokens).find((p) => gemmWindowBytes(cols, tokens / p) <= limits.maxUniformBufferBindingSize);
  return parts !== undefined && parts < limits.maxUniformBuffersPerShaderStage ? parts : undefined;
}

/** Options of the batch plan. */
export interface TokenBatchOptions {
  /** Most tokens per batch. */
  batch: number;
  /**
   * Read GEMM inputs as uniform windows, spreading each over this many CPU threads: the portable kernels for
   * software adapters, which DecodePlan sets it for. Without it (a real GPU) each GEMM splits K over the lanes of a
   * workgroup instead, and attention runs a workgroup per (head, token).
   */
  windowThreads?: number;
  /** Select each row's best candidates on the GPU when a decode asks for them (GPUs; see kernels/top-k.ts). */
  topCandidates?: boolean;
  /** The adapter's fixed subgroup size: split-K GEMMs sum their lanes with subgroup shuffles (GPUs that offer them). */
  subgroupSize?: number;
  /** Most tokens of a decode step (the sequences decoded at once): rows of logits it holds (default `batch`). */
  decodeRows?: number;
}

/** A batch's dispatches: the layers', then (decode only) the output norm, LM head and argmax from `headFrom` on. */
interface DispatchList {
  dispatches: BatchDispatch[];
  headFrom: number;
}

export class TokenBatch {
  /** Dispatches for any batch, and (software adapters) for batches up to each of SMALL_TILES tokens. */
  private readonly list: DispatchList;
  private readonly small: Array<{ tile: number; list: DispatchList }> = [];
  /** The selection of rows' best candidates (topCandidates). */
  private readonly top: TopKPlan | undefined;
  private readonly buffers: GPUBuffer[] = [];
  private readonly step: GPUBuffer;
  private readonly ids: GPUBuffer;
  private readonly places: GPUBuffer;
  private readonly sampled: GPUBuffer;
  private readonly logits: GPUBuffer;
  /** Mapped after a decode: the sampled ids, then the logits rows asked for. */
  private staging: GPUBuffer | undefined;
  private readonly vocab: number;
  /** Per GEMM_TILE tokens, the step uniform with `first` set (windowed GEMMs only). */
  private readonly tileSteps: GPUBuffer[] = [];
  /** Most tokens per batch. */
  readonly batch: number;
  /** Most tokens per decode step. */
  readonly decodeRows: number;
  /** The host's part of the last decode step (for profiles). */
  lastHostTimes: StepHostTimes = { encodeMs: 0, submitMs: 0, waitMs: 0 };

  constructor(
    private readonly device: GPUDevice,
    config: LlamaConfig,
    w: DecodeWeights,
    arena: KvArena,
    prefill: TokenBatchOptions,
  ) {
    const { embedding: d, heads, kvHeads, headDim, feedForward, rmsEpsilon: eps } = config;
    const shape: AttentionShape = { heads, kvHeads, headDim, maxCtx: arena.positions, kv: arena.kv };
    const qkvRows = (heads + 2 * kvHeads) * headDim;
    const batch = (this.batch = prefill.batch);
    // Only a decode step has logits: a 64-token prompt chunk of a 152k vocabulary would otherwise hold 39 MB of them.
    const rows = (this.decodeRows = Math.min(prefill.decodeRows ?? batch, batch));
    const vocab = (this.vocab = w.output.reduce((n, m) => n + m.rows, 0));
    const windowed = prefill.windowThreads !== undefined;
    const subgroupSize = prefill.subgroupSize && prefill.subgroupSize <= GEMM_LANES ? prefill.subgroupSize : undefined;
    this.step = this.own(createUniform(device, STEP_BYTES, "batch-step"));
    if (windowed) for (let k = 0; k < Math.ceil(batch / GEMM_TILE); k++) this.tileSteps.push(this.own(createUniform(device, STEP_BYTES, "prefill-tile-step")));
    // Whole tiles of tokens, so every tile's window lies inside the buffer.
    const tokens = Math.ceil(batch / WINDOW_TILE) * WINDOW_TILE;
    const f32 = (count: number, label: string) => this.own(createStorage(device, tokens * count * 4, label, windowed ? GPUBufferUsage.UNIFORM : 0));
    this.ids = this.own(createStorage(device, batch * 4, "batch-ids"));
    this.places = this.own(createStorage(device, batch * 8, "batch-places"));
    this.sampled = this.own(createStorage(device, rows * 4, "batch-sampled"));
    this.logits = this.own(createStorage(device, rows * vocab * 4, "batch-logits"));
    const x = f32(d, "prefill-x");
    const normed = f32(d, "prefill-normed");
    const qkv = f32(qkvRows, "prefill-qkv");
    const attn = f32(heads * headDim, "prefill-attn");
    const hidden = f32(feedForward, "prefill-hidden");
    const pipelines = new Map<string, GPUComputePipeline>();
    const cached = (key: unknown[], make: () => GPUComputePipeline) => {
      const k = JSON.stringify(key);
      if (!pipelines.has(k)) pipelines.set(k, make());
      return pipelines.get(k)!;
    };
    // The list being built, and the tokens of its GEMMs' windows.
    let list: BatchDispatch[] = [];
    let tile = WINDOW_TILE;
    const add = (kind: string, pipeline: GPUComputePipeline, buffers: BufferRange[], grid: BatchDispatch["grid"]) =>
      list.push({ kind, pipeline, bindGroup: bindBuffers(device, pipeline, buffers), grid });
    const gemm = (kind: string, m: GpuMatrix, options: Omit<GemmOptions, "type">, input: GPUBuffer, output: GPUBuffer, extra: BufferRange[] = [], yStride = m.rows, yOffset = 0) => {
      const matrix = { type: m.type, rows: m.rows, cols: m.cols, yStride, yOffset };
      if (!windowed) {
        const pipeline = cached(["gemm-split-k", options, matrix], () => createSplitKGemm(device, { ...options, ...matrix, subgroupSize }));
        return add(kind, pipeline, [this.step, input, output, ...m.planes, ...extra], (n) => splitKGrid(m.rows, n));
      }
      // A window too wide for the uniform limits falls back to the portable kernel reading storage.
      const parts = windowParts(device.limits, m.cols, tile);
      const launch = parts ? balancedLaunch(Math.ceil(m.rows / GEMM_ROWS), prefill.windowThreads) : undefined;
      const window = parts && launch ? { cols: m.cols, tokens: tile, workgroupSize: launch.workgroupSize, parts } : undefined;
      const pipeline = cached(["gemm", options, matrix, window], () => createGemm(device, { ...options, ...matrix, window }));
      if (!window || !launch) return add(kind, pipeline, [this.step, input, output, ...m.planes, ...extra], (n) => groupsFor(gemmInvocations(m.rows, n)));
      const partTokens = tile / window.parts;
      const bytes = gemmWindowBytes(m.cols, partTokens);
      // A small tile's list serves batches of at most `tile` tokens: one window, from the first token.
      for (let first = 0; first < (tile === WINDOW_TILE ? batch : 1); first += tile) {
        const [x, ...rest] = Array.from({ length: window.parts }, (_, p) => ({ buffer: input, offset: (first + p * partTokens) * m.cols * 4, size: bytes }));
        const bindGroup = bindBuffers(device, pipeline, [this.tileSteps[first / GEMM_TILE]!, x!, output, ...m.planes, ...extra, ...rest]);
        list.push({ kind, pipeline, bindGroup, grid: () => launch.workgroups, first });
      }
    };
    // On a GPU a workgroup per token's row; on a software adapter an invocation per row.
    const normLanes = windowed ? undefined : RMS_NORM_LANES;
    const norm = (gain: BufferRange) => add("rms-norm", cached(["norm"], () => createRmsNorm(device, batch, d, eps, normLanes)), [x, normed, gain], normLanes ? (n) => n : groupsFor);
    const places = { buffer: this.places, size: batch * 8 };
    const nb = w.embeddings.cols / 32;
    const embed = createEmbed(device, w.embeddings.type, w.embeddings.rows, w.embeddings.cols);
    const rope = createRopeKv(device, shape, w.ropeStyle, true);
    const attentionLanes = windowed ? undefined : CAUSAL_ATTENTION_LANES;
    const attention = createCausalAttention(device, shape, attentionLanes);
    const argmax = createArgmax(device, vocab);
    const partial = this.own(createStorage(device, rows * argmaxChunks(vocab) * 8, "batch-argmax-partial"));
    const build = (tokens: number): DispatchList => {
      list = [];
      tile = tokens;
      add("embed", embed, [{ buffer: this.ids, size: batch * 4 }, x, ...w.embeddings.planes], (n) => groupsFor(n * nb));
      w.layers.forEach((layer, i) => {
        norm(layer.attnNorm);
        let offset = 0;
        layer.qkv.forEach((m) => {
          const bias = layer.qkvBias && { buffer: layer.qkvBias.buffer, offset: layer.qkvBias.offset + offset * 4, size: m.rows * 4 };
          gemm("qkv", m, { bias: bias !== undefined }, normed, qkv, bias ? [bias] : [], qkvRows, offset);
          offset += m.rows;
        });
        add("rope-kv", rope, [this.step, qkv, arena.ropeTable, arena.keys[i]!, arena.values[i]!, places], (n) => groupsFor(ropeKvInvocations(shape, w.ropeStyle, n)));
        add("attention", attention, [this.step, qkv, arena.keys[i]!, arena.values[i]!, attn, places], (n) => (attentionLanes ? [heads, n] : groupsFor(heads * n)));
        gemm("o-residual", layer.o, { epilogue: "residual" }, attn, x);
        norm(layer.ffnNorm);
        gemm("gate-up-swiglu", layer.gate, { epilogue: "swiglu" }, normed, hidden, layer.up.planes);
        gemm("down-residual", layer.down, { epilogue: "residual" }, hidden, x);
      });
      const headFrom = list.length;
      norm(w.outputNorm);
      let row = 0;
      for (const shard of w.output) {
        gemm("lm-head", shard, {}, normed, this.logits, [], vocab, row);
        row += shard.rows;
      }
      add("argmax", argmax.chunks, [this.logits, partial], (n) => [groupsFor(argmaxChunks(vocab)), n]);
      add("argmax", argmax.finish, [partial, this.sampled], (n) => [1, n]);
      return { dispatches: list, headFrom };
    };
    this.list = build(WINDOW_TILE);
    if (prefill.topCandidates) {
      this.top = createTopKPlan(device, this.logits, vocab, rows);
      this.buffers.push(...this.top.buffers);
    }
    if (windowed) for (const small of SMALL_TILES.filter((t) => t < Math.min(batch, WINDOW_TILE))) this.small.push({ tile: small, list: build(small) });
  }

  /** Dispatches of a prompt chunk. */
  get dispatchCount(): number {
    return this.list.headFrom;
  }

  /** Submits the evaluation of prompt tokens at their places (in batches, without logits); the queue orders the rest. */
  submit(tokens: readonly number[], places: readonly Place[]): void {
    for (let from = 0; from < tokens.length; from += this.batch) {
      const to = Math.min(tokens.length, from + this.batch);
      this.device.queue.submit([this.record(tokens.slice(from, to), places.slice(from, to), false).finish()]);
    }
  }

  /**
   * One decode step of several sequences: a token each, at its place. Resolves each token's greedy next id, and its
   * logits or best candidates where `wants` asks for them, once the GPU is done.
   */
  async decode(tokens: readonly number[], places: readonly Place[], wants: readonly RowWant[] = []): Promise<BatchStep> {
    const n = tokens.length;
    if (n > this.decodeRows) throw new RangeError(`a decode step holds at most ${this.decodeRows} tokens, got ${n}`);
    const start = performance.now();
    const top = this.top;
    const rows = (want: RowWant) => wants.flatMap((w, row) => (w === want || (want === "logits" && w === "top" && !top) ? [row] : []));
    const [logitRows, topRows] = [rows("logits"), top ? rows("top") : []];
    const rowBytes = this.vocab * 4;
    const topBytes = TOP_CANDIDATE_BYTES;
    // The ids first, then each asked-for row of logits, then the candidates, each at an offset getMappedRange accepts.
    const idBytes = Math.ceil(n / 2) * 8;
    const stride = Math.ceil(rowBytes / 8) * 8;
    const topAt = idBytes + logitRows.length * stride;
    const size = topAt + topRows.length * topBytes;
    if (!this.staging || this.staging.size < size) {
      if (this.staging) {
        this.staging.destroy();
        this.buffers.splice(this.buffers.indexOf(this.staging), 1);
      }
      this.staging = this.own(this.device.createBuffer({ size: Math.max(size, idBytes + stride), usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST, label: "batch-staging" }));
    }
    const staging = this.staging;
    const encoder = this.record(tokens, places, true);
    if (top && topRows.length > 0) encodeTopK(encoder, top, n);
    encoder.copyBufferToBuffer(this.sampled, 0, staging, 0, n * 4);
    logitRows.forEach((row, k) => encoder.copyBufferToBuffer(this.logits, row * rowBytes, staging, idBytes + k * stride, rowBytes));
    topRows.forEach((row, k) => encoder.copyBufferToBuffer(top!.output, row * topBytes, staging, topAt + k * topBytes, topBytes));
    const commands = encoder.finish();
    const encoded = performance.now();
    this.device.queue.submit([commands]);
    const submitted = performance.now();
    await staging.mapAsync(GPUMapMode.READ, 0, size);
    this.lastHostTimes = { encodeMs: encoded - start, submitMs: submitted - encoded, waitMs: performance.now() - submitted };
    try {
      const ids = [...new Uint32Array(staging.getMappedRange(0, n * 4))];
      const result: BatchStep = { ids, logits: Array.from({ length: n }, () => undefined), top: Array.from({ length: n }, () => undefined) };
      logitRows.forEach((row, k) => (result.logits[row] = new Float32Array(staging.getMappedRange(idBytes + k * stride, stride).slice(0, rowBytes))));
      topRows.forEach((row, k) => (result.top[row] = candidatesOf(staging.getMappedRange(topAt + k * topBytes, topBytes), this.vocab)));
      return result;
    } finally {
      staging.unmap();
    }
  }

  /** Bytes of GPU memory it holds (activations of a full batch, logits of a decode step, staging). */
  get bytes(): number {
    return this.buffers.reduce((sum, buffer) => sum + buffer.size, 0);
  }

  destroy(): void {
    for (const buffer of this.buffers) buffer.destroy();
  }

  /**
   * Writes a batch's tokens, places and step uniforms (at most `batch` tokens) to the queue and returns its dispatches
   * with their grids: the layers, and with `head` the LM head and argmax. A submit right after runs the batch.
   */
  prepare(tokens: readonly number[], places: readonly Place[], head: boolean): Array<{ kind: string; pipeline: GPUComputePipeline; bindGroup: GPUBindGroup; workgroups: number | [number, number] }> {
    const { queue } = this.device;
    const n = tokens.length;
    queue.writeBuffer(this.ids, 0, Uint32Array.from(tokens));
    queue.writeBuffer(this.places, 0, Uint32Array.from(places.flat()));
    queue.writeBuffer(this.step, 0, encodeStep(0, n));
    this.tileSteps.forEach((step, tile) => queue.writeBuffer(step, 0, encodeStep(0, n, tile * GEMM_TILE)));
    const { dispatches, headFrom } = this.small.find((s) => n <= s.tile)?.list ?? this.list;
    return dispatches
      .slice(0, head ? dispatches.length : headFrom)
      .filter((d) => d.first === undefined || d.first < n)
      .map(({ kind, pipeline, bindGroup, grid }) => ({ kind, pipeline, bindGroup, workgroups: grid(n) }));
  }

  /** Records one batch (see prepare) in one compute pass. */
  private record(tokens: readonly number[], places: readonly Place[], head: boolean): GPUCommandEncoder {
    const dispatches = this.prepare(tokens, places, head);
    const encoder = this.device.createCommandEncoder();
    const pass = encoder.beginComputePass();
    for (const d of dispatches) {
      pass.setPipeline(d.pipeline);
      pass.setBindGroup(0, d.bindGroup);
      if (typeof d.workgroups === "number") pass.dispatchWorkgroups(d.workgroups);
      else pass.dispatchWorkgroups(...d.workgroups);
    }
    pass.end();
    return encoder;
  }

  private own(buffer: GPUBuffer): GPUBuffer {
    this.buffers.push(buffer);
    return buffer;
  }
}
