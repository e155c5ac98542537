/** The engine's public surface: server/, chat/ and cli/ import from here. */
export { createEngine, DEFAULT_PARALLEL, DEFAULT_QUEUE, type EngineOptions, type LocalBackendName, type ModelDeclaration } from "./engine.js";
export type { Engine, EngineStats } from "./engine-types.js";
export type { GenerateOptions, LoadedModel, ModelInfo } from "./backend.js";
export type { PrefixDivergence } from "./backends/llama-cpp/slot-pool.js";
export { createRemoteModel, type RemoteModelSpec } from "./backends/remote/remote-model.js";
export type { ScriptedModelSpec } from "./backends/scripted/scripted-model.js";
export { createScriptGate, type ScriptGate } from "./backends/scripted/script-gate.js";
export type { GpuChoice } from "./backends/llama-cpp/load-llama.js";
export { DEFAULT_DISK_MIN_TOKENS, type PrefixDiskSettings } from "./backends/llama-cpp/prefix-disk-cache.js";
export { EngineError, toEngineError, contextOverflow, type EngineErrorCode, type EngineErrorDetails } from "./errors.js";
export type { CacheTier, FinishReason, GenerationEvent, TokenLogprob, Usage } from "./events.js";
export type * from "./messages.js";
export { collectResult, type ChatResult, type ResultBlock } from "./collect.js";
export { checkEventSequence } from "./event-invariants.js";
