/**
 * What a backend provides: it loads a model and runs requests on it. The engine owns admission (queue, limits);
 * the backend owns its slots (for llama.cpp: sequences of one context, with prefix affinity).
 */
import type { ChatRequest, CompletionRequest } from "./messages.js";
import type { GenerationEvent } from "./events.js";

/** What is known about a loaded model; served by /v1/models and `kiln models show`. */
export interface ModelInfo {
  /** The id clients send (`model` field). */
  id: string;
  /** Other names that resolve to this model. */
  aliases: string[];
  /** Backend name: "llama-cpp" | "remote" | "webgpu" | "scripted". */
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
  /** Number of requests this model can decode at once (its slots). */
  readonly parallel: number;
  /** The disk tier's figures, for backends that have one. */
  cacheStats?(): PrefixCacheStats;
  dispose(): Promise<void>;
}
