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
import { createKvArena, destroyKvArena, type KvArena } from "./plan/kv-arena.js";
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
  /** Prompt tokens per prefill batch (default 64; 1 evaluates prompts token by token). */
  promptBatch?: number;
  /** Sequences served at once, each with its slot of the KV arena; their decode steps run as one batch (default 1). */
  parallel?: number;
  ids: IdFactory;
}

export async function loadWebGpuModel(options: WebGpuModelOptions): Promise<WebGpuModel> {
  const file = await openGgufTensors(options.path);
  const config = readLlamaConfig(file.header);
  checkWeightTypes(file);
  const ctxSize = defaultContextSize(config.contextLength, options.ctxSize);
  const vocabulary = await loadVocabulary(options.path, { warm: options.warmUp });
  const arena = new WeightArena(options.gpu.device);
  const parallel = options.parallel ?? 1;
  let kv: KvArena | undefined;
  let batch: TokenBatch | undefined;
  try {
    const weights = await uploadDecodeWeights(file, config, arena);
    kv = createKvArena(options.gpu.device, config, ctxSize, parallel);
    // Prompts go through it in chunks of promptBatch tokens (unless 1: token by token); decode steps of up to
    // `parallel` sequences at once.
    const promptBatch = options.promptBatch ?? 64;
    const most = Math.max(promptBatch, parallel);
    if (most > 1) batch = createTokenBatch(options.gpu, config, weights, kv, { batch: most, decodeRows: parallel });
    const shared = { arena: kv, batch };
    const plans = Array.from({ length: parallel }, (_, slot) => new DecodePlan(options.gpu, config, weights, ctxSize, { prefillBatch: promptBatch }, { ...shared, slot }));
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
