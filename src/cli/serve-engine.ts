/**
 * The engine of `kiln serve`: local declarations resolve through the model store (pulling when needed), remote
 * ones become replica pools of OpenAI-compatible upstreams.
 */
import { join } from "node:path";
import type { RemoteModelSpec, Engine, GpuLayersChoice, ModelDeclaration as EngineModel, PrefixDiskSettings } from "../engine/index.js";
import type { ModelDeclaration } from "./serve-config.js";
import { toGpuChoice, type DraftFlags, type GpuFlag } from "./options.js";
import { resolveDraft } from "./resolve-draft.js";

/** What the engine needs from `kiln serve`'s merged settings (the draft flags apply to models that name no draft). */
export interface ServeEngineSettings extends DraftFlags {
  models: ModelDeclaration[];
  parallel?: number;
  queue?: number;
  ctxSize?: number;
  threads?: number;
  backend?: "llama-cpp" | "webgpu";
  gpu?: GpuFlag;
  gpuLayers?: GpuLayersChoice;
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

/** Resolves every declared model (the default model when none is) and loads them. */
export async function openServeEngine(settings: ServeEngineSettings, hooks: ServeEngineHooks): Promise<Engine> {
  const { DEFAULT_MODEL } = await import("../models/index.js");
  const declarations = settings.models.length ? settings.models : [{ kind: "local" as const, source: DEFAULT_MODEL, aliases: [] }];
  const models: EngineModel[] = [];
  const remoteModels: RemoteModelSpec[] = [];
  for (const declaration of declarations) {
    if (declaration.kind === "local") models.push(await resolveLocal(declaration, settings));
    else remoteModels.push(toRemoteSpec(declaration));
  }
  const { createEngine } = await import("../engine/index.js");
  return createEngine({
    models,
    remoteModels,
    parallel: settings.parallel, queue: settings.queue, ctxSize: settings.ctxSize, threads: settings.threads, backend: settings.backend,
    gpu: toGpuChoice(settings.gpu), gpuLayers: settings.gpuLayers,
    // A GPU load retried on the CPU, a partial offload: said once, in the server's log.
    warn: (message) => hooks.log(`kiln: warning: ${message}`),
    prefixCache: settings.prefixCache,
    prefillLane: settings.prefillLane,
    warmUp: true,
    prefixCacheDisk: settings.prefixCache && settings.cacheDiskBytes > 0 ? await diskTier(settings, hooks) : undefined,
    onModelLoad: hooks.onModelLoad,
    // debug: show where each prompt stopped matching the cache (why a request re-evaluated its prefix).
    onPrefixDivergence: settings.logLevel === "debug" ? (model, info) => hooks.log(`prefix cache ${model}: ${JSON.stringify(info)}`) : undefined,
  });
}

/** The disk tier under `$KILN_HOME/cache/prefix`; its warnings go to the server log. */
async function diskTier(settings: ServeEngineSettings, hooks: ServeEngineHooks): Promise<PrefixDiskSettings> {
  const { kilnHome } = await import("../models/index.js");
  return { dir: join(kilnHome(), "cache", "prefix"), maxBytes: settings.cacheDiskBytes, minTokens: settings.cacheMinTokens, warn: (message) => hooks.log(`kiln: ${message}`) };
}

async function resolveLocal(declaration: Extract<ModelDeclaration, { kind: "local" }>, flags: DraftFlags): Promise<EngineModel> {
  const { resolveModel, parseModelRef, createProgressRenderer } = await import("../models/index.js");
  const renderer = createProgressRenderer(process.stderr);
  try {
    const path = await resolveModel(declaration.source, { onProgress: (p) => renderer.update(p) });
    const draft = await resolveDraft(declaration.draftModel ?? flags.draftModel, declaration.draftMax ?? flags.draftMax, (p) => renderer.update(p));
    return { id: declaration.name ?? parseModelRef(declaration.source).name, path, aliases: declaration.aliases, backend: declaration.backend, draft };
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
