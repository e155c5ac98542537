/**
 * The engine of `kiln serve`: local declarations resolve through the model store (pulling when needed), remote
 * ones become replica pools of OpenAI-compatible upstreams.
 */
import { join } from "node:path";
import type { RemoteModelSpec, Engine, GpuLayersChoice, ModelDeclaration as EngineModel, PrefixDiskSettings } from "../engine/index.js";
import type { ResidencySettings } from "./residency-options.js";
import type { ModelDeclaration } from "./serve-config.js";
import { toGpuChoice, type DraftFlags, type GpuFlag } from "./options.js";
import { optimizeTokenPathSooner } from "./token-path-tiers.js";
import { UsageError } from "./report-error.js";
import { resolveDraft } from "./resolve-draft.js";

/** How `kiln serve` runs its local models, as the flags and the config file set it (absent: the engine's default). */
export interface ServeModelSettings {
  parallel?: number;
  queue?: number;
  ctxSize?: number;
  threads?: number;
  backend?: "llama-cpp" | "webgpu";
  gpu?: GpuFlag;
  gpuLayers?: GpuLayersChoice;
}

/** What the engine needs from `kiln serve`'s merged settings (the draft flags apply to models that name no draft). */
export interface ServeEngineSettings extends DraftFlags, ServeModelSettings, ResidencySettings {
  models: ModelDeclaration[];
  prefixCache: boolean;
  /** Disk budget of the prefix cache (0: RAM only). */
  cacheDiskBytes: number;
  cacheMinTokens?: number;
  prefillLane: boolean;
  logLevel: string;
}

/** Hooks of {@link openServeEngine}. */
export interface ServeEngineHooks {
  log(line: string): void;
  onModelLoad?(model: string, milliseconds: number): void;
}

/**
 * Resolves every declared model and loads them (they stay loaded), and offers every model of the store on demand.
 * Without declared models the default model is pulled when missing and loaded at start, but unloads when idle like
 * any model loaded on demand.
 */
export async function openServeEngine(settings: ServeEngineSettings, hooks: ServeEngineHooks): Promise<Engine> {
  const { DEFAULT_MODEL, cacheDir } = await import("../models/index.js");
  const { storeOnDemand } = await import("./store-on-demand.js");
  const declarations = settings.models;
  if (declarations.length === 0) {
    // Models loaded on demand load without a draft: a draft is declared with the model it drafts for.
    if (settings.draftModel) throw new UsageError("--draft-model drafts for the models named with --model (or the config file's models), and none is named", "kiln serve --model qwen2.5-coder-1.5b --draft-model qwen2.5-coder-0.5b");
    await resolveLocal({ kind: "local", source: DEFAULT_MODEL, aliases: [] }, {});
  }
  const models: EngineModel[] = [];
  const remoteModels: RemoteModelSpec[] = [];
  for (const declaration of declarations) {
    if (declaration.kind === "local") models.push(await resolveLocal(declaration, settings));
    else remoteModels.push(toRemoteSpec(declaration));
  }
  const { createEngine } = await import("../engine/index.js");
  const engine = await createEngine({
    models,
    remoteModels,
    parallel: settings.parallel, queue: settings.queue, ctxSize: settings.ctxSize, threads: settings.threads, backend: settings.backend,
    gpu: toGpuChoice(settings.gpu), gpuLayers: settings.gpuLayers, cacheDir: cacheDir(),
    // A GPU load retried on the CPU, a partial offload: said once, in the server's log.
    warn: (message) => hooks.log(`kiln: warning: ${message}`),
    prefixCache: settings.prefixCache,
    prefillLane: settings.prefillLane,
    warmUp: true,
    prefixCacheDisk: settings.prefixCache && settings.cacheDiskBytes > 0 ? await diskTier(settings, hooks) : undefined,
    onModelLoad: hooks.onModelLoad,
    onDemand: storeOnDemand({ pull: settings.pullOnDemand, preload: declarations.length === 0 ? [DEFAULT_MODEL] : [], log: hooks.log }),
    keepAliveMs: settings.keepAliveMs,
    maxLoadedModels: settings.maxLoadedModels,
    memoryBudget: settings.maxMemory,
    kvCacheTypes: settings.kvCacheTypes,
    flashAttention: settings.flashAttention,
    // debug: show where each prompt stopped matching the cache (why a request re-evaluated its prefix).
    onPrefixDivergence: settings.logLevel === "debug" ? (model, info) => hooks.log(`prefix cache ${model}: ${JSON.stringify(info)}`) : undefined,
  });
  // After the declared models loaded: their loading runs once, and the optimizing compiler would only slow it.
  optimizeTokenPathSooner();
  return engine;
}

/** The disk tier under `$KILN_HOME/cache/prefix`; its warnings go to the server log. */
async function diskTier(settings: ServeEngineSettings, hooks: ServeEngineHooks): Promise<PrefixDiskSettings> {
  const { cacheDir } = await import("../models/index.js");
  return { dir: join(cacheDir(), "prefix"), maxBytes: settings.cacheDiskBytes, minTokens: settings.cacheMinTokens, warn: (message) => hooks.log(`kiln: ${message}`) };
}

async function resolveLocal(declaration: Extract<ModelDeclaration, { kind: "local" }>, flags: DraftFlags): Promise<EngineModel> {
  const { resolveModel, parseModelRef, createProgressRenderer } = await import("../models/index.js");
  const renderer = createProgressRenderer(process.stderr);
  try {
    const path = await resolveModel(declaration.source, { onProgress: (p) => renderer.update(p) });
    const { aliases, backend, reasoning } = declaration;
    const draft = await resolveDraft(declaration.draftModel ?? flags.draftModel, declaration.draftMax ?? flags.draftMax, (p) => renderer.update(p));
    return { id: declaration.name ?? parseModelRef(declaration.source).name, path, aliases, backend, reasoning, draft };
  } finally {
    renderer.finish();
  }
}

/** A remote declaration as the engine takes it: one replica per upstream URL, all with the same key. */
export function toRemoteSpec(declaration: Extract<ModelDeclaration, { kind: "remote" }>): RemoteModelSpec {
  return {
    id: declaration.name,
    aliases: declaration.aliases,
    upstreamModel: declaration.upstreamModel,
    replicas: declaration.upstreams.map((url) => ({ url, ...(declaration.apiKey ? { apiKey: declaration.apiKey } : {}) })),
    contextSize: declaration.contextWindow,
    maxConcurrency: declaration.maxConcurrency,
  };
}
