/**
 * The contract every backend implements (llama-cpp, webgpu, remote, scripted): opened once per engine with the
 * engine's settings, it loads models and runs requests on them. The engine owns admission (queue, limits); the
 * backend owns its slots (for llama.cpp: sequences of one context, with prefix affinity).
 */
import type { BackendSettings } from "./engine-options.js";
import type { ChatRequest, CompletionRequest } from "./messages.js";
import type { EmbeddingRequest, EmbeddingResult } from "./embeddings.js";
import type { GenerationEvent } from "./events.js";

/** What is known about a loaded model; served by /v1/models and `kiln models show`. */
export interface ModelInfo {
  /** The id clients send (`model` field). */
  id: string;
  /** Other names that resolve to this model. */
  aliases: string[];
  /** The registered backend that serves it: "llama-cpp" | "webgpu" | "remote" | "scripted" (or one added). */
  backend: string;
  /** Context window per sequence, in tokens (what a request may use: prompt + output). */
  contextSize: number;
  /** The context length the model was trained with, when known. */
  trainContextSize?: number;
  /** Unix seconds (file time or load time). */
  created: number;
  ownedBy: string;
  /** True when the model can do fill-in-the-middle (has FIM tokens). */
  fim: boolean;
  /** Free-form facts for `show` and `/v1/models` details (architecture, parameters, quantization, replicas…). */
  details?: Record<string, unknown>;
}

export interface GenerateOptions {
  /** Aborting stops generation promptly (within one decode step) and frees the slot. */
  signal?: AbortSignal;
  /** How long the model stays loaded after this request: ms, 0 unload at once, negative never (default: the engine's). */
  keepAliveMs?: number;
}

/** The prefix cache's disk tier as /metrics shows it. */
export interface PrefixCacheStats {
  /** Bytes of this model's saved states. */
  diskBytes: number;
  diskFiles: number;
}

/** A model ready to serve. `generate`/`complete` throw (reject on first `next()`) for errors before `start`. */
export interface LoadedModel {
  readonly info: ModelInfo;
  generate(request: ChatRequest, options?: GenerateOptions): AsyncIterable<GenerationEvent>;
  complete(request: CompletionRequest, options?: GenerateOptions): AsyncIterable<GenerationEvent>;
  /** Tokens of the rendered prompt: equals `start.inputTokens` for the same request. */
  countTokens(request: ChatRequest): Promise<number>;
  /**
   * One unit-length vector per input, for backends that can embed; the engine refuses embedding requests for a
   * model without it. Bad input (empty, unknown token ids, too long, a `dimensions` it cannot give) is refused
   * before any input is evaluated.
   */
  embed?(request: EmbeddingRequest, options?: GenerateOptions): Promise<EmbeddingResult>;
  /** Number of requests this model can decode at once (its slots). */
  readonly parallel: number;
  /** Bytes it holds in RAM and VRAM (weights and context), for the engine's memory budget; absent: its file size. */
  readonly memory?: number;
  /** The disk tier's figures, for backends that have one. */
  cacheStats?(): PrefixCacheStats;
  /** Its decode steps so far (llama.cpp models). */
  stepStats?(): StepStats | undefined;
  dispose(): Promise<void>;
}

/** A model's decode steps since load: how many, their tokens, and their time in compute and on the host between them. */
export interface StepStats {
  steps: number;
  tokens: number;
  computeMs: number;
  /** Time between two decodes while sequences were generating: sampling, per-token work, events. */
  hostMs: number;
}

/** An opened backend: it loads the models declared for it and releases what it shares between them. */
export interface Backend<Spec = unknown> {
  /** Loads one model; failures are EngineErrors naming the model or file. */
  load(spec: Spec): Promise<LoadedModel>;
  /** What the backend finds on this machine (`kiln info`), for backends that can tell. */
  describe?(): Promise<Record<string, unknown>>;
  /** Releases what the backend holds (dispose its models first). */
  dispose(): Promise<void>;
}

/** Opens a backend; the engine calls it only when some model names that backend. */
export type BackendFactory<Spec = unknown> = (settings: BackendSettings) => Promise<Backend<Spec>>;
