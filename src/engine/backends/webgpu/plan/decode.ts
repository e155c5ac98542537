/**
 * One decode step of a llama model on WebGPU: one command encoder, one compute pass, one submit per token, and
 * a 4-byte readback of the sampled id. The sampled id stays in a GPU buffer, so the next step can take it from
 * there (the base for run-ahead decoding).
 */
import { availableParallelism } from "node:os";
import { EngineError, contextOverflow } from "../../../../errors/engine-error.js";
import type { GpuDevice } from "../device.js";
import type { LlamaConfig } from "../model/llama-config.js";
import { readBack } from "../kernels/run-kernel.js";
import { encodeStep } from "../kernels/step.js";
import { createDecodeBuffers, ownedDecodeBuffers, type DecodeBuffers } from "./decode-buffers.js";
import { buildDecodeDispatches, type DecodeDispatches, type DecodePlanOptions, type PlannedDispatch } from "./decode-dispatches.js";
import type { DecodeWeights } from "./decode-weights.js";
import { createKvArena, destroyKvArena, slotCaches, type KvArena } from "./kv-arena.js";
import { RUN_AHEAD_MAX, createRunAheadRing, type RunAheadRing } from "./run-ahead-ring.js";
import { TokenBatch, type Place } from "./token-batch.js";
import type { Candidate } from "../sampler.js";
import { candidatesOf, createTopKPlan, encodeTopK, TOP_CANDIDATE_BYTES, type TopKPlan } from "../kernels/top-k.js";

/** Debug outputs of a step (each costs an extra copy and sync). */
export interface DecodeStepOptions {
  /** Read back the full logits (parity tests; CPU sampling paths). */
  logits?: boolean;
  /** Read back only the best candidates, selected on the GPU (plans for GPUs; elsewhere the full logits come instead). */
  top?: boolean;
  /** Copy the residual stream after every layer and read it back (names the faulty kernel when a layer drifts). */
  residuals?: boolean;
}

/** What a step produced. */
export interface DecodeStepResult {
  /** The greedy (argmax) next token. */
  token: number;
  logits?: Float32Array;
  /** The best candidates, best first (a batched step on a GPU, when asked for instead of the logits). */
  top?: Candidate[];
  residuals?: Float32Array[];
}

/** Prompt tokens per prefill batch unless DecodePlanOptions.prefillBatch says otherwise. */
const DEFAULT_PREFILL_BATCH = 64;

/** Host milliseconds of one decode step: recording its commands, submitting them, waiting for the sampled id. */
export interface StepHostTimes {
  encodeMs: number;
  submitMs: number;
  waitMs: number;
}

/**
 * What the sequences of one model share: the KV arena (a slot each) and the batch plan that evaluates their prompts
 * and their batched decode steps. A plan made without one gets an arena of one slot and a batch plan of its own.
 */
export interface SharedPlan {
  arena: KvArena;
  batch: TokenBatch | undefined;
}

/**
 * The batch plan's choices for an adapter: the portable windowed kernels spread over `threads` on software adapters;
 * on GPUs, the split-K kernels (their lanes summed by subgroups where the adapter offers them) and the best candidates
 * of sampled rows selected on the GPU.
 */
export function createTokenBatch(gpu: GpuDevice, config: LlamaConfig, weights: DecodeWeights, arena: KvArena, sizes: { batch: number; decodeRows: number }, threads = Math.min(availableParallelism(), 16)): TokenBatch {
  const software = gpu.info.software;
  return new TokenBatch(gpu.device, config, weights, arena, { ...sizes, windowThreads: software ? threads : undefined, topCandidates: !software, subgroupSize: software ? undefined : gpu.info.subgroupSize });
}

/** A loaded model's decode loop for one sequence. */
export class DecodePlan {
  /** Tokens decoded so far (the next token's position). */
  position = 0;
  /** This sequence's slot in the model's KV arena. */
  readonly slot: number;
  /** Host times of the last step() (profiles read them). */
  lastHostTimes: StepHostTimes = { encodeMs: 0, submitMs: 0, waitMs: 0 };
  /** Dispatches the last recorded token actually recorded (counted as they are encoded; tests check it). */
  lastStepDispatches = 0;
  private readonly buffers: DecodeBuffers;
  private readonly dispatches: DecodeDispatches;
  private ring: RunAheadRing | undefined;
  private readonly batched: TokenBatch | undefined;
  /** GPUs: the selection of the best candidates, and a staging buffer for the id and them. */
  private readonly top: { plan: TopKPlan; staging: GPUBuffer } | undefined;
  /** Made here (not shared with other sequences): destroyed with the plan. */
  private readonly owned: SharedPlan | undefined;

  constructor(
    private readonly gpu: GpuDevice,
    private readonly config: LlamaConfig,
    weights: DecodeWeights,
    /** Positions the KV cache holds. */
    readonly maxCtx: number,
    options: DecodePlanOptions = {},
    /** The model's arena and batch plan, and this sequence's slot in it. */
    shared?: SharedPlan & { slot: number },
  ) {
    // Software adapters: 8 rows per invocation, grids spread over the CPU's threads, attention inside the O
    // projection (each measured faster on llvmpipe). Norms are fused everywhere: their producers prepare them, so it costs no more than a norm dispatch.
    const software: DecodePlanOptions = { gemvRows: 8, threads: Math.min(availableParallelism(), 16), attentionPrologue: true };
    // GPUs: GEMVs split K over up to 64 lanes (a workgroup per row group), or most of the GPU sits idle.
    const hardware: DecodePlanOptions = { gemvLanes: 64, subgroupSize: gpu.info.subgroupSize };
    const choices: DecodePlanOptions = { fuseNorm: true, ...(gpu.info.software ? software : hardware), ...options };
    if (!shared) {
      const arena = createKvArena(gpu.device, config, maxCtx, 1, choices.kvCache);
      const batch = choices.prefillBatch ?? DEFAULT_PREFILL_BATCH;
      // Alone, the plan decodes with its own kernels: its batch plan evaluates prompts only.
      this.owned = { arena, batch: batch > 1 ? createTokenBatch(gpu, config, weights, arena, { batch, decodeRows: 1 }, choices.threads) : undefined };
    }
    const { arena, batch } = shared ?? this.owned!;
    this.slot = shared?.slot ?? 0;
    if (arena.kv !== (choices.kvCache ?? "f32")) throw new RangeError(`the arena holds a ${arena.kv} cache, the plan asks for ${choices.kvCache ?? "f32"}`);
    this.buffers = createDecodeBuffers(gpu.device, config, slotCaches(arena, config, this.slot));
    // The kernels index the cache by its layout (positions rounded up per slot); maxCtx bounds the positions used.
    this.dispatches = buildDecodeDispatches(gpu.device, config, weights, this.buffers, arena.positions, choices);
    // A shared batch plan evaluates prompts unless this plan asks for token-by-token prompts.
    this.batched = choices.prefillBatch === 1 ? undefined : batch;
    if (!gpu.info.software) {
      const plan = createTopKPlan(gpu.device, this.buffers.logits, config.vocabSize, 1);
      const staging = gpu.device.createBuffer({ size: 8 + TOP_CANDIDATE_BYTES, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST, label: "top-staging" });
      this.top = { plan, staging };
    }
  }

  /** Where the next token goes in the arena; throws when the context is full. */
  nextPlace(): Place {
    if (this.position >= this.maxCtx) throw contextOverflow(this.position + 1, this.maxCtx);
    return [this.slot, this.position];
  }

  /**
   * Evaluates `tokens` at the next positions, filling the KV cache without logits: in batches through the prefill
   * plan, or one decode step each when batching is off. Returns when the GPU is done.
   */
  async prefill(tokens: readonly number[]): Promise<void> {
    if (tokens.length === 0) return;
    if (this.position + tokens.length > this.maxCtx) throw contextOverflow(this.position + tokens.length, this.maxCtx);
    if (!this.batched) {
      for (const token of tokens) await this.step(token);
      return;
    }
    try {
      // A chunk at a time, so other sequences' decode steps are queued between the chunks of a long prompt.
      for (let from = 0; from < tokens.length; from += this.batched.batch) {
        const chunk = tokens.slice(from, from + this.batched.batch);
        this.batched.submit(chunk, chunk.map((_, i) => [this.slot, this.position + i] as const));
        this.position += chunk.length;
        await this.gpu.device.queue.onSubmittedWorkDone();
      }
    } catch (error) {
      throw this.gpu.failure ?? new EngineError("backend_failure", `WebGPU prompt evaluation failed: ${String(error)}`, {}, { cause: error });
    }
    this.gpu.throwIfFailed();
  }

  /** Prompt tokens evaluated together (1: token by token). */
  get promptBatch(): number {
    return this.batched?.batch ?? 1;
  }

  /** Bytes of GPU memory this sequence's own buffers hold (not the shared arena or batch plan). */
  get bytes(): number {
    return this.ownBuffers().reduce((sum, buffer) => sum + buffer.size, 0);
  }

  /** The buffers this sequence made for itself: activations, staging, run-ahead ring, candidate selection. */
  private ownBuffers(): GPUBuffer[] {
    const top = this.top ? [...this.top.plan.buffers, this.top.staging] : [];
    return [...ownedDecodeBuffers(this.buffers), ...Object.values(this.ring ?? {}), ...top];
  }

  /** Dispatches recorded per token. */
  get dispatchCount(): number {
    return this.dispatches.list.length;
  }

  /** The dispatches one step records, in order, each with its kernel class. */
  get dispatchList(): readonly PlannedDispatch[] {
    return this.dispatches.list;
  }

  /** Decodes one token: `token`, or (when omitted) the id the previous step sampled on the GPU. */
  async step(token?: number, options: DecodeStepOptions = {}): Promise<DecodeStepResult> {
    if (this.position >= this.maxCtx) throw contextOverflow(this.position + 1, this.maxCtx);
    try {
      return await this.submitStep(token, options);
    } catch (error) {
      // A lost device rejects mapAsync (an AbortError, which must not read as a client abort); report the device's
      // own failure when it has one.
      if (error instanceof EngineError) throw error;
      throw this.gpu.failure ?? new EngineError("backend_failure", `WebGPU decode step failed: ${String(error)}`, {}, { cause: error });
    }
  }

  private async submitStep(token: number | undefined, options: DecodeStepOptions): Promise<DecodeStepResult> {
    const { device } = this.gpu;
    const b = this.buffers;
    if (token !== undefined) device.queue.writeBuffer(b.token, 0, new Uint32Array([token]));
    device.queue.writeBuffer(b.step, 0, encodeStep(this.position));
    const dump = options.residuals ? device.createBuffer({ size: this.config.layers * this.config.embedding * 4, usage: GPUBufferUsage.COPY_DST | GPUBufferUsage.COPY_SRC }) : undefined;
    const start = performance.now();
    const encoder = device.createCommandEncoder();
    this.encode(encoder, dump);
    // The best candidates come with the id in one staging buffer; where the plan cannot select them, the logits come.
    const top = options.top ? this.top : undefined;
    if (top) encodeTopK(encoder, top.plan, 1);
    const staging = top ? top.staging : b.tokenStaging;
    encoder.copyBufferToBuffer(b.token, 0, staging, 0, 4);
    if (top) encoder.copyBufferToBuffer(top.plan.output, 0, staging, 8, TOP_CANDIDATE_BYTES);
    const commands = encoder.finish();
    const encoded = performance.now();
    device.queue.submit([commands]);
    const submitted = performance.now();
    this.position++;
    await staging.mapAsync(GPUMapMode.READ);
    this.lastHostTimes = { encodeMs: encoded - start, submitMs: submitted - encoded, waitMs: performance.now() - submitted };
    const id = new Uint32Array(staging.getMappedRange(0, 4))[0]!;
    const candidates = top ? candidatesOf(staging.getMappedRange(8, TOP_CANDIDATE_BYTES).slice(0), this.config.vocabSize) : undefined;
    staging.unmap();
    this.gpu.throwIfFailed();
    const result: DecodeStepResult = { token: id, ...(candidates ? { top: candidates } : {}) };
    if (options.logits || (options.top && !top)) result.logits = new Float32Array(await readBack(device, b.logits, this.config.vocabSize * 4));
    if (dump) {
      const all = new Float32Array(await readBack(device, dump));
      result.residuals = Array.from({ length: this.config.layers }, (_, l) => all.slice(l * this.config.embedding, (l + 1) * this.config.embedding));
      dump.destroy();
    }
    return result;
  }

  /**
   * Run-ahead decode: `count` greedy steps in one submit, each taking the previous step's sampled id straight from
   * the GPU (the first takes `token` when given), with one map at the end. This takes the CPU round trip out of
   * every token but the last. The caller stops at EOS by setting `position` back: the extra KV entries are simply
   * overwritten later.
   */
  async runAhead(count: number, token?: number): Promise<number[]> {
    if (count < 1 || count > RUN_AHEAD_MAX) throw new RangeError(`run-ahead takes 1..${RUN_AHEAD_MAX} steps, got ${count}`);
    if (this.position + count > this.maxCtx) throw contextOverflow(this.position + count, this.maxCtx);
    const { device } = this.gpu;
    const b = this.buffers;
    const ring = (this.ring ??= createRunAheadRing(device));
    if (token !== undefined) device.queue.writeBuffer(b.token, 0, new Uint32Array([token]));
    const steps = new Uint32Array(count * 4);
    for (let i = 0; i < count; i++) steps.set(encodeStep(this.position + i), i * 4);
    device.queue.writeBuffer(ring.steps, 0, steps);
    const encoder = device.createCommandEncoder();
    for (let i = 0; i < count; i++) {
      // Copies between passes set each step's uniform and collect its id; the whole run is one command buffer.
      encoder.copyBufferToBuffer(ring.steps, i * 16, b.step, 0, 16);
      this.encode(encoder, undefined);
      encoder.copyBufferToBuffer(b.token, 0, ring.ids, i * 4, 4);
    }
    encoder.copyBufferToBuffer(ring.ids, 0, ring.staging, 0, count * 4);
    device.queue.submit([encoder.finish()]);
    this.position += count;
    try {
      await ring.staging.mapAsync(GPUMapMode.READ, 0, count * 4);
    } catch (error) {
      throw this.gpu.failure ?? new EngineError("backend_failure", `WebGPU run-ahead failed: ${String(error)}`, {}, { cause: error });
    }
    const ids = [...new Uint32Array(ring.staging.getMappedRange(0, count * 4))];
    ring.staging.unmap();
    this.gpu.throwIfFailed();
    return ids;
  }

  /** Forgets the sequence (the KV entries are simply overwritten later). */
  reset(): void {
    this.position = 0;
  }

  destroy(): void {
    this.owned?.batch?.destroy();
    if (this.owned) destroyKvArena(this.owned.arena);
    for (const buffer of this.ownBuffers()) buffer.destroy();
  }

  private encode(encoder: GPUCommandEncoder, dump: GPUBuffer | undefined): void {
    const { list, layerEnds } = this.dispatches;
    let pass = encoder.beginComputePass();
    let recorded = 0;
    for (let i = 0; i < list.length; i++) {
      const d = list[i]!;
      pass.setPipeline(d.pipeline);
      pass.setBindGroup(0, d.bindGroup);
      pass.dispatchWorkgroups(d.workgroups);
      recorded++;
      const layer = dump ? layerEnds.indexOf(i) : -1;
      if (layer >= 0) {
        // Copies cannot sit inside a compute pass: end it, copy the residual, and go on in a new pass.
        pass.end();
        encoder.copyBufferToBuffer(this.buffers.x, 0, dump!, layer * this.config.embedding * 4, this.config.embedding * 4);
        pass = encoder.beginComputePass();
      }
    }
    pass.end();
    this.lastStepDispatches = recorded;
  }
}
