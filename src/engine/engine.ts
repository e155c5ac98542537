/**
 * The engine: resolves a model name, admits the request through that model's scheduler, and streams the backend's
 * events. Errors before `start` reject the first `next()` (the server still owes a real HTTP status then); errors
 * after it become an `error` event.
 */
import { availableParallelism } from "node:os";
import type { GenerateOptions, LoadedModel, ModelInfo } from "./backend.js";
import type { Engine, EngineStats } from "./engine-types.js";
import { EngineError, toEngineError } from "./errors.js";
import type { GenerationEvent } from "./events.js";
import { newId, type IdFactory } from "../lib/ids.js";
import { openLlamaCppBackend } from "./backends/llama-cpp/llama-cpp-backend.js";
import type { GpuChoice } from "./backends/llama-cpp/load-llama.js";
import type { PrefixDivergence } from "./backends/llama-cpp/slot-pool.js";
import type { PrefixDiskSettings } from "./backends/llama-cpp/prefix-disk-cache.js";
import { Scheduler } from "./scheduler.js";
import { createRemoteModel, type RemoteModelSpec } from "./backends/remote/remote-model.js";
import { createScriptedModel, type ScriptedModelSpec } from "./backends/scripted/scripted-model.js";

/** Where a local model runs: llama.cpp (default) or kiln's own WebGPU kernels. */
export type LocalBackendName = "llama-cpp" | "webgpu";

/** A model to serve: its id, the .gguf path (already resolved by the model store), other names, its backend. */
export interface ModelDeclaration { id: string; path: string; aliases?: string[]; backend?: LocalBackendName }

export interface EngineOptions {
  models: ModelDeclaration[];
  /** Models served by remote OpenAI-compatible engines (replicas of vLLM, SGLang, llama-server, kiln). */
  remoteModels?: RemoteModelSpec[];
  /** Models that replay recorded events (tests of everything around the model, without loading one). */
  scriptedModels?: ScriptedModelSpec[];
  /** Backend of models that do not name one (default "llama-cpp"). */
  backend?: LocalBackendName;
  /** Sequences decoded together per model (default 4). */
  parallel?: number;
  /** Tokens per sequence, prompt + output (default min(train context, 4096)). */
  ctxSize?: number;
  /** CPU threads (default: the machine's available parallelism). */
  threads?: number;
  /** Requests that may wait per model beyond `parallel` (default 64); more are refused as overloaded. */
  queue?: number;
  /** Reuse cached prompt prefixes across requests (default true; false for benchmarks). */
  prefixCache?: boolean;
  /** Prompt tokens the WebGPU backend evaluates together (default 64; 1: token by token, a benchmark baseline). */
  promptBatch?: number;
  /** Save long prefixes under this folder too, so they outlive eviction and restarts (llama.cpp models). */
  prefixCacheDisk?: PrefixDiskSettings;
  /** "auto" (default): a GPU when one works, else the CPU; false: CPU only. */
  gpu?: GpuChoice;
  /** Tool-call ids (injectable for golden files). */
  ids?: IdFactory;
  /** Debug hook: where a prompt diverged from the best cached sequence (for a prefix-cache log). */
  onPrefixDivergence?(model: string, info: PrefixDivergence): void;
  /** Called as each model (local or remote) finishes loading, with how long it took (metrics). */
  onModelLoad?(model: string, milliseconds: number): void;
}

interface Served { model: LoadedModel; scheduler: Scheduler }

export const DEFAULT_PARALLEL = 4;
export const DEFAULT_QUEUE = 64;

/**
 * Opens llama.cpp (only when there are local models) and loads every declared model; a model that cannot load
 * fails the whole call.
 */
export async function createEngine(options: EngineOptions): Promise<Engine> {
  const parallel = options.parallel ?? DEFAULT_PARALLEL;
  const queue = options.queue ?? DEFAULT_QUEUE;
  const backendOf = (model: ModelDeclaration) => model.backend ?? options.backend ?? "llama-cpp";
  const backends = await openLocalBackends(options, new Set(options.models.map(backendOf)), parallel);
  const served: Served[] = [];
  const add = async (loading: () => Promise<LoadedModel>) => {
    const started = performance.now();
    const model = await loading();
    served.push({ model, scheduler: new Scheduler({ model: model.info.id, parallel: model.parallel, queue }) });
    options.onModelLoad?.(model.info.id, performance.now() - started);
  };
  try {
    for (const declaration of options.models) await add(() => backends.get(backendOf(declaration))!.load(declaration));
    for (const spec of options.remoteModels ?? []) await add(() => createRemoteModel(spec));
    for (const spec of options.scriptedModels ?? []) await add(async () => createScriptedModel(spec));
  } catch (error) {
    await Promise.all(served.map(({ model }) => model.dispose()));
    await Promise.all([...backends.values()].map((backend) => backend.dispose()));
    throw error;
  }
  return assembleEngine([...backends.values()], served);
}

/** What the engine needs of a local backend. */
interface LocalBackend {
  load(model: ModelDeclaration): Promise<LoadedModel>;
  dispose(): Promise<void>;
}

/** Opens each backend some model needs; WebGPU (Dawn) loads only when a model asks for it. */
async function openLocalBackends(options: EngineOptions, names: Set<LocalBackendName>, parallel: number): Promise<Map<LocalBackendName, LocalBackend>> {
  const backends = new Map<LocalBackendName, LocalBackend>();
  if (names.has("llama-cpp")) {
    backends.set("llama-cpp", await openLlamaCppBackend({
      gpu: options.gpu,
      parallel,
      ctxSize: options.ctxSize,
      threads: options.threads ?? availableParallelism(),
      prefixCache: options.prefixCache,
      prefixCacheDisk: options.prefixCacheDisk,
      ids: options.ids,
      onPrefixDivergence: options.onPrefixDivergence,
    }));
  }
  if (names.has("webgpu")) {
    const { openWebGpuBackend } = await import("./backends/webgpu/webgpu-backend.js");
    backends.set("webgpu", openWebGpuBackend({ ctxSize: options.ctxSize, prefixCache: options.prefixCache, promptBatch: options.promptBatch, parallel, ids: options.ids ?? newId }));
  }
  return backends;
}

function assembleEngine(backends: LocalBackend[], served: Served[]): Engine {
  const totals = { promptTokens: 0, cachedPromptTokens: 0 };
  const find = (name: string) => served.find(({ model }) => model.info.id === name || model.info.aliases.includes(name));
  const resolve = (name: string): Served => {
    const entry = find(name);
    if (!entry) throw new EngineError("not_found", `model: ${name}`, { param: "model" });
    return entry;
  };
  return {
    generate: (request, options) => admitAndRun(() => resolve(request.model), (m) => m.generate(request, options), options, totals),
    complete: (request, options) => admitAndRun(() => resolve(request.model), (m) => m.complete(request, options), options, totals),
    countTokens: async (request) => resolve(request.model).model.countTokens(request),
    listModels: () => served.map(({ model }) => model.info),
    findModel: (name): ModelInfo | undefined => find(name)?.model.info,
    stats: (): EngineStats => ({
      queueDepth: served.reduce((sum, { scheduler }) => sum + scheduler.queueDepth, 0),
      activeSequences: served.reduce((sum, { scheduler }) => sum + scheduler.activeCount, 0),
      ...totals,
      ...sumCacheStats(served),
    }),
    close: async () => {
      for (const { scheduler } of served) scheduler.close();
      await Promise.all(served.map(({ model }) => model.dispose()));
      await Promise.all(backends.map((backend) => backend.dispose()));
    },
  };
}

function sumCacheStats(served: Served[]): Pick<EngineStats, "prefixCacheDiskBytes" | "prefixCacheDiskFiles"> {
  const stats = served.map(({ model }) => model.cacheStats?.());
  return {
    prefixCacheDiskBytes: stats.reduce((sum, s) => sum + (s?.diskBytes ?? 0), 0),
    prefixCacheDiskFiles: stats.reduce((sum, s) => sum + (s?.diskFiles ?? 0), 0),
  };
}

/** Admission, usage totals and the before/after-start error contract around one backend stream. */
async function* admitAndRun(
  resolve: () => Served,
  run: (model: LoadedModel) => AsyncIterable<GenerationEvent>,
  options: GenerateOptions | undefined,
  totals: { promptTokens: number; cachedPromptTokens: number },
): AsyncGenerator<GenerationEvent> {
  const served = resolve();
  const permit = await served.scheduler.admit(options?.signal);
  let started = false;
  try {
    for await (const event of run(served.model)) {
      if (event.type === "start") {
        started = true;
        totals.promptTokens += event.inputTokens;
        totals.cachedPromptTokens += event.cachedInputTokens;
      }
      yield event;
    }
  } catch (error) {
    if (!started) throw toEngineError(error);
    yield { type: "error", error: toEngineError(error) };
  } finally {
    permit.release();
  }
}
