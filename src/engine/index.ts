/**
 * The engine's public surface, the only module outside src/engine may import: the internal request/event
 * language, createEngine and its options, the backend contract and registry, and the errors. Nothing here names
 * a particular backend.
 */
export { createEngine, defaultMemoryBudget } from "./engine.js";
export { DEFAULT_KEEP_ALIVE_MS, DEFAULT_PARALLEL, DEFAULT_QUEUE, FLASH_ATTENTION_CHOICES, KV_CACHE_TYPES, type FlashAttentionChoice, type KvCacheType, type KvCacheTypes, type BackendSettings, type EngineOptions, type GpuBackendName, type GpuChoice, type GpuLayersChoice, type PrefixDiskSettings, type PrefixDivergence } from "./engine-options.js";
export type { DraftDeclaration, ModelDeclaration, OnDemandModel, OnDemandModels, RemoteModelSpec, ReplicaSpec, ScriptedModelSpec, ScriptGate } from "./model-specs.js";
export type { Engine, EngineStats } from "./engine-types.js";
export type { Backend, BackendFactory, GenerateOptions, LoadedModel, ModelInfo, PrefixCacheStats } from "./backend.js";
export { describeBackend, listBackendNames, registerBackend } from "./backend-registry.js";
export { EngineError, toEngineError, contextOverflow, type EngineErrorCode, type EngineErrorDetails } from "../errors/engine-error.js";
export type * from "./events.js";
export type * from "./messages.js";
export type { EmbeddingRequest, EmbeddingResult } from "./embeddings.js";
export { collectResult, type ChatResult, type ResultBlock } from "./collect.js";
export { checkEventSequence } from "./event-invariants.js";
export { parseToolArguments, readToolArguments } from "./tool-arguments.js";
