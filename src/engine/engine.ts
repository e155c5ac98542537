/**
 * The engine: holds the named model loaded through the residency (residency/model-residency.ts, which loads models on
 * demand and unloads idle ones), admits the request through that model's scheduler, and streams the backend's
 * events. Errors before `start` reject the first `next()` (the server still owes a real HTTP status then); errors
 * after it become an `error` event.
 */
import { totalmem } from "node:os";
import type { Backend, GenerateOptions, LoadedModel, ModelInfo } from "./backend.js";
import { openBackend } from "./backend-registry.js";
import type { Engine, EngineStats } from "./engine-types.js";
import { DEFAULT_KEEP_ALIVE_MS, DEFAULT_QUEUE, toBackendSettings, type EngineOptions } from "./engine-options.js";
import { EngineError, toEngineError } from "../errors/engine-error.js";
import type { GenerationEvent } from "./events.js";
import { checkInputsNotEmpty, type EmbeddingRequest, type EmbeddingResult } from "./embeddings.js";
import type { OnDemandModel } from "./model-specs.js";
import { ModelResidency, type Lease } from "./residency/model-residency.js";
import type { Loaded, ResidentSource } from "./residency/resident.js";
import type { Permit } from "./scheduler.js";
import { lazyIterable } from "../lib/lazy-iterable.js";
import { mapStream } from "../lib/map-stream.js";

/** One declared model: the backend it names and what that backend loads. */
interface Load { backend: string; spec: { id: string; aliases?: string[] } }

/** What the default memory budget leaves to the rest of the machine: a tenth of its memory, at least 1 GiB. */
export function defaultMemoryBudget(total = totalmem()): number {
  return total - Math.max(total / 10, 1024 ** 3);
}

/**
 * Opens each backend as the first model that names it loads (through the registry), loads every declared model,
 * local ones first (a model that cannot load fails the whole call), and serves the on-demand models through the
 * residency, which loads and unloads them.
 */
export async function createEngine(options: EngineOptions): Promise<Engine> {
  const declared: Load[] = [
    ...options.models.map((spec) => ({ backend: spec.backend ?? options.backend ?? "llama-cpp", spec })),
    ...(options.remoteModels ?? []).map((spec) => ({ backend: "remote", spec })),
    ...(options.scriptedModels ?? []).map((spec) => ({ backend: "scripted", spec })),
  ];
  const settings = toBackendSettings(options);
  const backends = new Map<string, Promise<Backend>>();
  const backend = (name: string): Promise<Backend> => {
    let opened = backends.get(name);
    if (!opened) {
      opened = openBackend(name, settings);
      backends.set(name, opened);
      // A backend that cannot open is tried again by the next model that names it.
      opened.catch(() => backends.delete(name));
    }
    return opened;
  };
  const onDemand = options.onDemand;
  // A load a request waits for skips the start-up warm-up: with another model streaming on 2 CPU cores, the load took
  // 2.0 s without it against 4.3-7.5 s with it (bench/results/2026-11-26-vm-on-demand.md); the step planner then fits
  // its cost model from the model's first steps instead of a calibration.
  const toSource = (model: OnDemandModel, warmUp?: boolean): ResidentSource => ({
    info: stubInfo(model.id, model.aliases, model.backend ?? options.backend ?? "llama-cpp", { contextSize: model.contextSize, created: model.created, fileSize: model.fileSize }),
    estimatedBytes: model.fileSize,
    pinned: false,
    load: async () => {
      const spec = await model.resolve();
      return (await backend(model.backend ?? options.backend ?? "llama-cpp")).load(warmUp === false ? { ...(spec as object), warmUp } : spec);
    },
  });
  const residency = new ModelResidency({
    queue: options.queue ?? DEFAULT_QUEUE,
    keepAliveMs: options.keepAliveMs ?? DEFAULT_KEEP_ALIVE_MS,
    maxModels: options.maxLoadedModels,
    maxBytes: options.memoryBudget ?? defaultMemoryBudget(),
    loadTimeoutMs: options.loadTimeoutMs ?? 5 * 60_000,
    failureMemoryMs: options.loadFailureMemoryMs ?? 30_000,
    discover: onDemand && ((name) => {
      const model = onDemand.find(name);
      return model && toSource(model, false);
    }),
    offered: onDemand && (() => onDemand.list().map((model) => toSource(model, false))),
    onModelLoad: options.onModelLoad,
    warn: options.warn,
  });
  const close = async () => {
    await residency.close();
    const opened = await Promise.allSettled(backends.values());
    await Promise.all(opened.flatMap((result) => (result.status === "fulfilled" ? [result.value.dispose()] : [])));
  };
  try {
    for (const { backend: name, spec } of declared) {
      await residency.preload({ info: stubInfo(spec.id, spec.aliases, name), estimatedBytes: 0, pinned: true, load: async () => (await backend(name)).load(spec) });
    }
    for (const name of onDemand?.preload ?? []) {
      const model = onDemand?.find(name);
      if (model) await residency.preload(toSource(model));
    }
  } catch (error) {
    await close();
    throw error;
  }
  return assembleEngine(residency, close);
}

/** What /v1/models shows of a model before its first load. */
function stubInfo(id: string, aliases: string[] = [], backend: string, facts: { contextSize?: number; created?: number; fileSize?: number } = {}): ModelInfo {
  return {
    id, aliases, backend, contextSize: facts.contextSize ?? 0, created: facts.created ?? 0, ownedBy: "kiln", fim: false,
    ...(facts.fileSize !== undefined ? { details: { fileSize: facts.fileSize } } : {}),
  };
}

function assembleEngine(residency: ModelResidency, close: () => Promise<void>): Engine {
  const totals = { promptTokens: 0, cachedPromptTokens: 0 };
  const loaded = () => residency.loadedModels();
  return {
    generate: (request, options) => admitAndRun(residency, request.model, (m) => m.generate(request, options), options, totals),
    complete: (request, options) => admitAndRun(residency, request.model, (m) => m.complete(request, options), options, totals),
    countTokens: async (request) => {
      const lease = await residency.acquire(request.model);
      try {
        return await lease.model.countTokens(request);
      } finally {
        lease.release();
      }
    },
    embed: (request, options) => admitAndEmbed(residency, request, options),
    listModels: () => residency.list().map((resident) => resident.describe()),
    findModel: (name): ModelInfo | undefined => residency.find(name)?.describe(),
    stats: (): EngineStats => ({
      queueDepth: loaded().reduce((sum, { scheduler }) => sum + scheduler.queueDepth, 0),
      activeSequences: loaded().reduce((sum, { scheduler }) => sum + scheduler.activeCount, 0),
      ...totals,
      ...sumCacheStats(loaded()),
      steps: loaded().flatMap(({ model }) => {
        const steps = model.stepStats?.();
        return steps ? [{ model: model.info.id, ...steps }] : [];
      }),
    }),
    close,
  };
}

function sumCacheStats(served: Loaded[]): Pick<EngineStats, "prefixCacheDiskBytes" | "prefixCacheDiskFiles"> {
  const stats = served.map(({ model }) => model.cacheStats?.());
  return {
    prefixCacheDiskBytes: stats.reduce((sum, s) => sum + (s?.diskBytes ?? 0), 0),
    prefixCacheDiskFiles: stats.reduce((sum, s) => sum + (s?.diskFiles ?? 0), 0),
  };
}

/** An embedding request holds its model and waits for a slot like a generation (it takes the same cores). */
async function admitAndEmbed(residency: ModelResidency, request: EmbeddingRequest, options: GenerateOptions = {}): Promise<EmbeddingResult> {
  checkInputsNotEmpty(request.inputs);
  const held = residency.acquire(request.model, options.signal);
  const lease: Lease = held instanceof Promise ? await held : held;
  try {
    const { model, scheduler } = lease;
    if (!model.embed) {
      throw new EngineError("invalid_request", `model: ${model.info.id} cannot compute embeddings (its ${model.info.backend} backend does not embed)`, { param: "model" });
    }
    const permit = await scheduler.admit(options.signal);
    try {
      return await model.embed(request, options);
    } finally {
      permit.release();
    }
  } catch (error) {
    throw toEngineError(error);
  } finally {
    lease.release(options.keepAliveMs);
  }
}

/** Holding the model, admission, usage totals and the before/after-start error contract around one backend stream. */
function admitAndRun(
  residency: ModelResidency,
  name: string,
  run: (model: LoadedModel) => AsyncIterable<GenerationEvent>,
  options: GenerateOptions | undefined,
  totals: { promptTokens: number; cachedPromptTokens: number },
): AsyncIterable<GenerationEvent> {
  return lazyIterable(async () => {
    let lease: Lease;
    let permit: Permit;
    try {
      // Awaited only while the model loads: a loaded model's request must join its queue within this first step.
      const held = residency.acquire(name, options?.signal);
      lease = held instanceof Promise ? await held : held;
    } catch (error) {
      throw toEngineError(error);
    }
    try {
      permit = await lease.scheduler.admit(options?.signal);
    } catch (error) {
      lease.release(options?.keepAliveMs);
      throw toEngineError(error);
    }
    const release = () => {
      permit.release();
      lease.release(options?.keepAliveMs);
    };
    let events: AsyncIterable<GenerationEvent>;
    try {
      events = run(lease.model);
    } catch (error) {
      release();
      throw toEngineError(error);
    }
    let started = false;
    return mapStream(events, {
      map: (event) => {
        if (event.type === "start") {
          started = true;
          totals.promptTokens += event.inputTokens;
          totals.cachedPromptTokens += event.cachedInputTokens;
        }
        return event;
      },
      fail: (error): GenerationEvent => {
        if (!started) throw toEngineError(error);
        return { type: "error", error: toEngineError(error) };
      },
      close: release,
    });
  });
}
