/**
 * One llama-family GGUF served by kiln's own WGSL kernels: weights uploaded to GPU arenas, the decode plan built once,
 * one sequence with prefix reuse, and the vocabulary loaded alone through the shared text service so prompts and
 * token ids match the llama.cpp backend exactly.
 */
import { stat } from "node:fs/promises";
import type { ModelInfo, StepStats } from "../../backend.js";
import type { GenerationEvent } from "../../events.js";
import { targetReasons, type GenerationPlan, type PlanTarget } from "../../generation-plan.js";
import { defaultContextSize, LocalModel } from "../../local-model.js";
import { loadVocabulary, type LoadedVocabulary } from "../../text/load-vocabulary.js";
import type { IdFactory } from "../../../lib/ids.js";
import { DecodeSession, SessionPool } from "./decode-session.js";
import { StepBatcher } from "./step-batcher.js";
import type { GpuDevice } from "./device.js";
import { openGgufTensors } from "./gguf/read-tensors.js";
import { readLlamaConfig } from "./model/llama-config.js";
import { createTokenBatch, DecodePlan } from "./plan/decode.js";
import { checkWeightTypes, uploadDecodeWeights } from "./plan/decode-weights.js";
import { createKvArena, destroyKvArena, kvArenaBytes, type KvArena } from "./plan/kv-arena.js";
import type { KvCacheType } from "./kernels/kv-cache-wgsl.js";
import type { TokenBatch } from "./plan/token-batch.js";
import { WeightArena } from "./plan/weight-arena.js";
import { runWebGpuGeneration } from "./run-webgpu-generation.js";

export interface WebGpuModelOptions {
  id: string;
  path: string;
  aliases?: string[];
  /** Whether the model thinks in `<think>` blocks; undefined: as its chat template says. */
  reasoning?: boolean;
  gpu: GpuDevice;
  /** Tokens of KV cache (prompt + output); default min(train context, 4096). */
  ctxSize?: number;
  /** Reuse the cached prompt prefix (default true). */
  prefixCache?: boolean;
  /** Start the large-prompt thread at load (servers). */
  warmUp?: boolean;
  /** Long prompts tokenized and rendered on worker threads (default true; false: in place, engine-options.ts). */
  promptThreads?: boolean;
  /** Where start-up facts are kept between runs (engine-options.ts). */
  cacheDir?: string;
  /** Prompt tokens per prefill batch (default 64; 1 evaluates prompts token by token). */
  promptBatch?: number;
  /** Sequences served at once, each with its slot of the KV arena; their decode steps run as one batch (default 1). */
  parallel?: number;
  /**
   * The KV cache's element type. Default on a GPU f16, as llama.cpp keeps it: half the VRAM of f32 (721 → 360 MiB for
   * SmolLM2's 4 × 4,096 tokens) and half the bytes each attention step reads. On a software adapter f32: its memory
   * is RAM, and there unpacking halves cost more than the reads save (8 requests at once ran ~6% slower with f16 on
   * Mesa). f32 also makes a sequence's numbers the same whether its steps ran alone or batched.
   */
  kvCache?: KvCacheType;
  ids: IdFactory;
}

export async function loadWebGpuModel(options: WebGpuModelOptions): Promise<WebGpuModel> {
  const file = await openGgufTensors(options.path);
  const config = readLlamaConfig(file.header);
  checkWeightTypes(file);
  const ctxSize = defaultContextSize(config.contextLength, options.ctxSize);
  const vocabulary = await loadVocabulary(options.path, { warm: options.warmUp, threads: options.promptThreads, cacheDir: options.cacheDir });
  const arena = new WeightArena(options.gpu.device);
  const parallel = options.parallel ?? 1;
  let kv: KvArena | undefined;
  let batch: TokenBatch | undefined;
  try {
    const weights = await uploadDecodeWeights(file, config, arena);
    const kvCache = options.kvCache ?? (options.gpu.info.software ? "f32" : "f16");
    kv = createKvArena(options.gpu.device, config, ctxSize, parallel, kvCache);
    // Prompts go through it in chunks of promptBatch tokens (unless 1: token by token); decode steps of up to
    // `parallel` sequences at once.
    const promptBatch = options.promptBatch ?? 64;
    const most = Math.max(promptBatch, parallel);
    if (most > 1) batch = createTokenBatch(options.gpu, config, weights, kv, { batch: most, decodeRows: parallel });
    const shared = { arena: kv, batch };
    const plans = Array.from({ length: parallel }, (_, slot) => new DecodePlan(options.gpu, config, weights, ctxSize, { prefillBatch: promptBatch, kvCache }, { ...shared, slot }));
    const size = (await stat(options.path)).size;
    const info: ModelInfo = {
      id: options.id,
      aliases: options.aliases ?? [],
      backend: "webgpu",
      contextSize: ctxSize,
      trainContextSize: config.contextLength,
      created: Math.floor(Date.now() / 1000),
      ownedBy: "kiln",
      fim: vocabulary.vocabulary.infill !== undefined,
      details: {
        path: options.path,
        fileSize: size,
        architecture: config.architecture,
        layers: config.layers,
        adapter: options.gpu.info.device || options.gpu.info.description,
        gpuBackend: options.gpu.info.backend,
        tier: options.gpu.info.tier,
        softwareAdapter: options.gpu.info.software,
        dispatchesPerToken: plans[0]!.dispatchCount,
        promptBatch: plans[0]!.promptBatch,
        parallel: plans.length,
        // GPU memory beside the weights: the KV cache of every sequence, the batch plan's and the sequences' buffers.
        kvCacheBytes: kvArenaBytes(kv),
        kvCacheTypes: `${kvCache}/${kvCache}`,
        contextMemory: kvArenaBytes(kv) + (batch?.bytes ?? 0) + plans.reduce((sum, plan) => sum + plan.bytes, 0),
        weightBytes: arena.bytes,
      },
    };
    const steps = new StepBatcher(options.gpu, parallel > 1 ? batch : undefined);
    const pool = new SessionPool(plans.map((plan) => new DecodeSession(plan, steps, options.prefixCache)));
    return new WebGpuModel(info, vocabulary, pool, steps, { weights: arena, kv, batch }, options.ids, ctxSize, options.reasoning);
  } catch (error) {
    batch?.destroy();
    if (kv) destroyKvArena(kv);
    arena.destroy();
    await vocabulary.dispose();
    throw error;
  }
}

export class WebGpuModel extends LocalModel {
  readonly parallel: number;
  protected readonly target: PlanTarget;

  constructor(
    readonly info: ModelInfo,
    private readonly vocabulary: LoadedVocabulary,
    private readonly pool: SessionPool,
    private readonly steps: StepBatcher,
    private readonly gpuMemory: { weights: WeightArena; kv: KvArena; batch: TokenBatch | undefined },
    private readonly ids: IdFactory,
    ctxSize: number,
    reasoning?: boolean,
  ) {
    super();
    this.target = { modelId: info.id, vocabulary: vocabulary.vocabulary, ctxSize, reasoning };
    info.details = { ...info.details, reasoning: targetReasons(this.target) };
    this.parallel = pool.sessions.length;
  }

  /** The weights and what the sequences hold on the GPU, for the engine's memory budget. */
  get memory(): number {
    const { weightBytes, contextMemory } = this.info.details ?? {};
    return Number(weightBytes ?? 0) + Number(contextMemory ?? 0);
  }

  /** Its decode steps so far: tokens per step shows how many sequences each step carried. */
  stepStats(): StepStats {
    return this.steps.stats();
  }

  async dispose(): Promise<void> {
    for (const session of this.pool.sessions) session.plan.destroy();
    this.gpuMemory.batch?.destroy();
    destroyKvArena(this.gpuMemory.kv);
    this.gpuMemory.weights.destroy();
    await this.vocabulary.dispose();
  }

  protected async *run(plan: GenerationPlan, signal?: AbortSignal): AsyncGenerator<GenerationEvent> {
    const { session, release } = this.pool.acquire(plan.prompt);
    try {
      yield* runWebGpuGeneration(session, plan, { vocabulary: this.vocabulary.vocabulary, ids: this.ids, compileGrammar: this.vocabulary.compileGrammar }, signal);
    } finally {
      release();
    }
  }
}
