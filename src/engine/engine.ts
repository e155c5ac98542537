/**
 * The engine: resolves a model name, admits the request through that model's scheduler, and streams the backend's
 * events. Errors before `start` reject the first `next()` (the server still owes a real HTTP status then); errors
 * after it become an `error` event.
 */
import type { Backend, GenerateOptions, LoadedModel, ModelInfo } from "./backend.js";
import { openBackend } from "./backend-registry.js";
import type { Engine, EngineStats } from "./engine-types.js";
import { DEFAULT_QUEUE, toBackendSettings, type BackendSettings, type EngineOptions } from "./engine-options.js";
import { EngineError, toEngineError } from "../errors/engine-error.js";
import type { GenerationEvent } from "./events.js";
import { checkInputsNotEmpty, type EmbeddingRequest, type EmbeddingResult } from "./embeddings.js";
import { Scheduler } from "./scheduler.js";

interface Served { model: LoadedModel; scheduler: Scheduler }

/** One model to load: the backend it names and what that backend loads. */
interface Load { backend: string; spec: unknown }

/**
 * Opens each backend some model names (through the registry) and loads every declared model, local ones first; a
 * model that cannot load fails the whole call.
 */
export async function createEngine(options: EngineOptions): Promise<Engine> {
  const queue = options.queue ?? DEFAULT_QUEUE;
  const loads: Load[] = [
    ...options.models.map((spec) => ({ backend: spec.backend ?? options.backend ?? "llama-cpp", spec })),
    ...(options.remoteModels ?? []).map((spec) => ({ backend: "remote", spec })),
    ...(options.scriptedModels ?? []).map((spec) => ({ backend: "scripted", spec })),
  ];
  const backends = new Map<string, Backend>();
  const served: Served[] = [];
  try {
    await openBackends(backends, loads, toBackendSettings(options));
    for (const { backend, spec } of loads) {
      const started = performance.now();
      const model = await backends.get(backend)!.load(spec);
      served.push({ model, scheduler: new Scheduler({ model: model.info.id, parallel: model.parallel, queue }) });
      options.onModelLoad?.(model.info.id, performance.now() - started);
    }
  } catch (error) {
    await Promise.all(served.map(({ model }) => model.dispose()));
    await Promise.all([...backends.values()].map((backend) => backend.dispose()));
    throw error;
  }
  return assembleEngine([...backends.values()], served);
}

/** Opens each named backend once, in the order models name them; `backends` keeps those opened if one fails. */
async function openBackends(backends: Map<string, Backend>, loads: Load[], settings: BackendSettings): Promise<void> {
  for (const { backend } of loads) {
    if (!backends.has(backend)) backends.set(backend, await openBackend(backend, settings));
  }
}

function assembleEngine(backends: Backend[], served: Served[]): Engine {
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
    embed: async (request, options) => admitAndEmbed(resolve(request.model), request, options),
    listModels: () => served.map(({ model }) => model.info),
    findModel: (name): ModelInfo | undefined => find(name)?.model.info,
    stats: (): EngineStats => ({
      queueDepth: served.reduce((sum, { scheduler }) => sum + scheduler.queueDepth, 0),
      activeSequences: served.reduce((sum, { scheduler }) => sum + scheduler.activeCount, 0),
      ...totals,
      ...sumCacheStats(served),
      steps: served.flatMap(({ model }) => {
        const steps = model.stepStats?.();
        return steps ? [{ model: model.info.id, ...steps }] : [];
      }),
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

/** An embedding request waits for a slot like a generation (it takes the same cores), then runs on the model. */
async function admitAndEmbed(served: Served, request: EmbeddingRequest, options: GenerateOptions = {}): Promise<EmbeddingResult> {
  const { model, scheduler } = served;
  if (!model.embed) {
    throw new EngineError("invalid_request", `model: ${model.info.id} cannot compute embeddings (its ${model.info.backend} backend does not embed)`, { param: "model" });
  }
  checkInputsNotEmpty(request.inputs);
  const permit = await scheduler.admit(options.signal);
  try {
    return await model.embed(request, options);
  } catch (error) {
    throw toEngineError(error);
  } finally {
    permit.release();
  }
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
