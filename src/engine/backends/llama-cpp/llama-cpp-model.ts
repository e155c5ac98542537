/**
 * One GGUF served by llama.cpp: a single context holding `parallel` sequences of `ctxSize` tokens each (node-llama-cpp
 * allocates contextSize × sequences KV cells, so every sequence can hold a full ctxSize), a slot pool with prefix
 * affinity over those sequences, and the request → token plan translation.
 */
import type { BatchingOptions, Llama, LlamaContext, LlamaModel } from "node-llama-cpp";
import { basename } from "node:path";
import type { GenerateOptions, ModelInfo, PrefixCacheStats, StepStats } from "../../backend.js";
import type { EmbeddingRequest, EmbeddingResult } from "../../embeddings.js";
import type { GenerationEvent } from "../../events.js";
import { targetReasons, type GenerationPlan, type PlanTarget } from "../../generation-plan.js";
import { LocalModel } from "../../local-model.js";
import { PromptThread } from "../../text/prompt-thread.js";
import { scanVocabulary, vocabularyOf, type Vocabulary } from "../../text/vocabulary.js";
import { newId, type IdFactory } from "../../../lib/ids.js";
import { sequenceOrdered } from "./batch-order.js";
import { DecodeBarrier } from "./decode-barrier.js";
import { DraftLength } from "./draft-length.js";
import { DraftModel } from "./draft-model.js";
import { CoreBudget, type ModelCores } from "./core-budget.js";
import { CoreSplit } from "./core-share.js";
import { describeModel } from "./describe-model.js";
import { EmbeddingContext } from "./embedding-context.js";
import { checkCellLimit, chooseContextSize, contextFailure, DEFAULT_FIT_CONTEXT, kvCellLimit, type ContextChoice } from "./fit-context.js";
import { describeKvCache, kvCacheContextOptions } from "./kv-cache-types.js";
import { loadGgufModel, warnOnStderr } from "./load-llama.js";
import { calibrateStepCost, describeStepCost } from "./calibrate-steps.js";
import { StepClock } from "./step-clock.js";
import { reportModelDistribution } from "./logprobs.js";
import { StepSampler } from "./step-sampler.js";
import { StepPlanner, type StepDevice } from "./step-planner.js";
import { laneSupports, PrefillLane } from "./prefill-lane.js";
import { laneFitsAtLoad, openDiskTier, openEmbeddingContext, openLaneContext, useCpuThreads, type ModelParts } from "./model-parts.js";
import { runGeneration, type GenerationRuntime } from "./run-generation.js";
import { StepInterrupter } from "./step-interrupter.js";
import { ReaderWakes } from "./reader-wakes.js";
import { SlotPool } from "./slot-pool.js";
import { useCellCopies } from "./copy-prefix.js";
import type { LlamaCppModelOptions } from "./llama-cpp-model-options.js";

/** Loads the file and creates its context; failures are `backend_failure` errors naming the file. */
export async function loadLlamaCppModel(options: LlamaCppModelOptions): Promise<LlamaCppModel> {
  // A server starts the large-prompt thread beside the load and is ready only with it: otherwise the first long
  // prompt (an agent's first turn after a restart) waits over a second for the worker to start.
  const promptThread = options.promptThreads === false ? undefined : new PromptThread(options.path, options.cacheDir);
  const warmed = options.warmUp ? promptThread?.warm() : undefined;
  // The load's own CPU work takes a part of the cores, so the models serving meanwhile step on fewer threads.
  const modelCores = (options.coreBudget ?? new CoreBudget(options.threads)).join();
  try {
    const loaded = await openModel(options, promptThread, modelCores);
    await warmed;
    // Measured once the load's other work is done: the prompt thread's start would count as the steps' own.
    if (options.warmUp) await loaded.warmUp();
    return loaded;
  } catch (error) {
    modelCores.leave();
    await promptThread?.dispose();
    throw error;
  }
}

async function openModel(options: LlamaCppModelOptions, promptThread: PromptThread | undefined, modelCores: ModelCores): Promise<LlamaCppModel> {
  // A context the Vulkan backend would abort on is refused before anything loads (fit-context.ts).
  const cells = await kvCellLimit(options.llama, options.path);
  if (options.ctxSize !== undefined) await checkCellLimit(options.llama, cells, { id: options.id, path: options.path, size: options.ctxSize, sequences: options.parallel });
  // "auto" layers leave VRAM for the asked context, or DEFAULT_FIT_CONTEXT per sequence (less when the caller needs
  // less); the default context then takes what memory is left.
  const wanted = options.ctxSize ?? Math.min(DEFAULT_FIT_CONTEXT, options.ctxSizeAtMost ?? DEFAULT_FIT_CONTEXT);
  const fitTokens = Math.min(wanted * options.parallel, cells.cells);
  const model = await loadGgufModel(options.llama, options.path, { gpuLayers: options.gpuLayers, fitTokens, warn: options.warn ?? warnOnStderr });
  // The CPU machinery (core share, thread pools, the prefill lane) pays only where every layer runs on the CPU.
  const device: StepDevice = options.llama.gpu === false || model.gpuLayers === 0 ? "cpu" : "gpu";
  const lanePossible = device === "cpu" && options.prefillLane !== false && options.parallel > 1;
  const choice: ContextChoice = options.ctxSize !== undefined ? { size: options.ctxSize, source: "asked" }
    : await chooseContextSize(options.llama, model, { sequences: options.parallel, lane: lanePossible && laneSupports(model), maxCells: cells.cells, atMost: options.ctxSizeAtMost });
  const ctxSize = choice.size;
  // The vocabulary's scan (JavaScript on this thread) runs while llama.cpp creates the context on a worker thread. It
  // reads the model, so a failed load frees the model only once the scan has ended.
  const scanning = scanVocabulary(model, options.path);
  scanning.catch(() => undefined); // a failure is met where the scan is awaited
  const freeModel = async () => {
    await scanning.catch(() => undefined);
    await model.dispose();
  };
  const cacheOptions = kvCacheContextOptions(options);
  let context: LlamaContext;
  const measured = options.batching?.itemPrioritizationStrategy;
  const batching: BatchingOptions = { ...options.batching, itemPrioritizationStrategy: sequenceOrdered(() => context, typeof measured === "function" ? measured : undefined) };
  try {
    context = await model.createContext({ contextSize: ctxSize, sequences: options.parallel, threads: options.threads, batching, ...cacheOptions });
  } catch (error) {
    const failure = await contextFailure(options.llama, model, { id: options.id, path: options.path, size: ctxSize, sequences: options.parallel }, error);
    await freeModel();
    throw failure;
  }
  const cores = device === "cpu" ? new CoreSplit(modelCores) : undefined;
  const cpu = cores ? useCpuThreads(context, model, options.threads, () => cores.mainCores()) : undefined;
  const draft = options.draft && await DraftModel.open(options, context, () => cores?.mainCores() ?? options.threads).catch(async (error: unknown) => {
    await context.dispose();
    cpu?.pool?.release();
    await freeModel();
    throw error;
  });
  const info = await describeModel(options.llama, model, context, { id: options.id, aliases: options.aliases ?? [], path: options.path }, choice);
  if (draft && options.draft) info.details = { ...info.details, draftModel: basename(options.draft.path), draftMax: draft.maxTokens };
  const lane = cores && options.prefillLane !== false && options.parallel > 1 && laneSupports(model)
    ? new PrefillLane(() => openLaneContext(model, ctxSize, options, cores, cacheOptions)) : undefined;
  info.details = { ...info.details, ...(cpu && { cpuThreading: cpu.threading, prefillLane: lane !== undefined }), ...describeKvCache(model, context, options.kvCacheTypes) };
  const disk = options.prefixCache === false ? undefined : await openDiskTier(options, context);
  const vocabulary = vocabularyOf(model, options.path, await scanning, promptThread);
  return new LlamaCppModel(options, model, context, info, ctxSize, vocabulary, { device, pool: cpu?.pool, steps: cpu?.steps, disk, lane, cores, modelCores, draft,
    cellCopies: device === "cpu" && useCellCopies(context, model), readersDuringSteps: options.readersDuringSteps ?? model.gpuLayers >= model.fileInsights.totalLayers });
}

export class LlamaCppModel extends LocalModel {
  readonly parallel: number;
  private readonly runtime: GenerationRuntime;
  protected readonly target: PlanTarget;
  private readonly pool: SlotPool;
  readonly planner: StepPlanner;
  private readonly clock: StepClock | undefined;
  private readonly embeddings: EmbeddingContext;
  /** A server's last step of a load: the step cost measured for the planner (calibrate-steps.ts), then the lane opened. */
  readonly warmUp: () => Promise<void>;

  constructor(
    options: LlamaCppModelOptions,
    private readonly model: LlamaModel,
    private readonly context: LlamaContext,
    readonly info: ModelInfo,
    ctxSize: number,
    vocabulary: Vocabulary,
    private readonly parts: ModelParts,
  ) {
    super();
    this.parallel = options.parallel;
    const sequences = Array.from({ length: options.parallel }, () => context.getSequence());
    const alone = () => !parts.modelCores.shared() && !(parts.cores?.besideActive() ?? false);
    const planner = this.planner = new StepPlanner({ device: parts.device, soleSequence: options.parallel === 1, generating: () => barrier.generating, alone,
      cellsPerSequence: parts.cellCopies ? ctxSize : undefined });
    const pool = this.pool = new SlotPool(sequences, {
      prefixCache: options.prefixCache ?? true, disk: parts.disk,
      detokenize: (tokens) => model.detokenize(tokens, true),
      onDivergence: options.onPrefixDivergence && ((divergence) => options.onPrefixDivergence?.(info.id, divergence)),
      copies: planner,
    });
    const barrier = new DecodeBarrier((ms) => planner.stepStarted(ms));
    this.clock = StepClock.attach(context, () => barrier.generating > 0);
    barrier.onIdle = () => this.clock?.idle();
    reportModelDistribution(context, model);
    const sampler = options.stepSampler === false ? undefined : StepSampler.attach(context, model, parts.device, options.stepSampler);
    this.warmUp = async () => {
      const calibration = await calibrateStepCost(model, sequences[0]!, parts.device, sequences[1]);
      planner.calibrated(calibration.parts, calibration.prefixCopyMs);
      info.details = { ...info.details, stepCostAtLoad: describeStepCost(calibration) };
      parts.lane?.warmUp(() => laneFitsAtLoad(model, ctxSize));
    };
    const steps = parts.pool && StepInterrupter.attach(context, (on) => parts.pool?.interrupt(on));
    // The lane's own request holds a slot of the main context too; the lane and embedding batches work beside it.
    if (parts.cores) Object.assign(parts.cores, { mainBusy: () => pool.busy > (parts.lane?.active ? 1 : 0), besideActive: () => parts.lane?.active || this.embeddings.active });
    if (parts.steps && options.stepsOnLoop !== false) parts.steps.onLoop = (tokens) => planner.onLoop(tokens);
    // Its requests take part of the process's cores from now on (a model on the GPU leaves them to the others).
    parts.modelCores.loaded(parts.device === "cpu" ? () => pool.busy > 0 : () => false);
    const drafts = parts.draft && { sequences: parts.draft.pairWith(sequences), length: new DraftLength(parts.draft.maxTokens, options.draft?.always), alone: () => barrier.generating <= 1 };
    this.runtime = { llama: options.llama, model, vocabulary, pool, ids: options.ids ?? newId, barrier, planner, steps, lane: parts.lane, drafts, sampler,
      readers: parts.readersDuringSteps ? ReaderWakes.attach(context) : undefined };
    this.target = { modelId: info.id, vocabulary, ctxSize, reasoning: options.reasoning };
    info.details = { ...info.details, reasoning: targetReasons(this.target) };
    this.embeddings = new EmbeddingContext(model, this.target, (size) => openEmbeddingContext(model, size, options.threads, parts.cores));
  }

  embed(request: EmbeddingRequest, options: GenerateOptions = {}): Promise<EmbeddingResult> {
    return this.embeddings.embed(request, options.signal);
  }

  protected run(plan: GenerationPlan, signal?: AbortSignal): AsyncIterable<GenerationEvent> {
    return runGeneration(this.runtime, plan, signal);
  }

  /** The weights (the file) and what the main context holds, for the engine's memory budget. */
  get memory(): number {
    const { fileSize, contextMemory } = this.info.details ?? {};
    return Number(fileSize ?? 0) + Number(contextMemory ?? 0);
  }

  stepStats(): StepStats | undefined {
    return this.clock && { ...this.clock.stats };
  }

  cacheStats(): PrefixCacheStats {
    const stats = this.parts.disk?.stats;
    return { diskBytes: stats?.bytes ?? 0, diskFiles: stats?.files ?? 0 };
  }

  /** Saves what the disk tier still lacks, then frees everything. */
  async dispose(): Promise<void> {
    await this.pool.flush();
    await this.context.dispose();
    await this.embeddings.dispose();
    await this.parts.draft?.dispose();
    await this.parts.lane?.dispose();
    await this.target.vocabulary.close();
    this.parts.pool?.release();
    this.parts.modelCores.leave();
    await this.model.dispose();
  }
}
