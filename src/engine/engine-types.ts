/** The engine's public surface: what server/, chat/ and cli/ call. */
import type { ChatRequest, CompletionRequest } from "./messages.js";
import type { GenerationEvent } from "./events.js";
import type { EmbeddingRequest, EmbeddingResult } from "./embeddings.js";
import type { GenerateOptions, ModelInfo, StepStats } from "./backend.js";

/** Live figures for /metrics, /health and start-up lines. */
export interface EngineStats {
  queueDepth: number;
  activeSequences: number;
  /** Prompt tokens reused from the prefix cache / all prompt tokens, since start. */
  cachedPromptTokens: number;
  promptTokens: number;
  /** Bytes and files of the prefix cache's disk tier (every local model's saved states). */
  prefixCacheDiskBytes: number;
  prefixCacheDiskFiles: number;
  /** Each llama.cpp model's decode steps (see step-clock.ts). */
  steps: Array<StepStats & { model: string }>;
}

export interface Engine {
  /** Chat generation. Errors before the first event are thrown (first `next()` rejects); later ones are `error` events. */
  generate(request: ChatRequest, options?: GenerateOptions): AsyncIterable<GenerationEvent>;
  /** Raw completion (no chat template). Same error contract as `generate`. */
  complete(request: CompletionRequest, options?: GenerateOptions): AsyncIterable<GenerationEvent>;
  /** Tokens of the rendered prompt, equal to `start.inputTokens` of the same request. */
  countTokens(request: ChatRequest): Promise<number>;
  /** Vectors for the inputs; a model whose backend cannot embed is refused (invalid_request naming `model`). */
  embed(request: EmbeddingRequest, options?: GenerateOptions): Promise<EmbeddingResult>;
  /** Every servable model (loaded or declared). */
  listModels(): ModelInfo[];
  /** Resolves an id or alias; undefined when unknown. */
  findModel(idOrAlias: string): ModelInfo | undefined;
  stats(): EngineStats;
  /** Stops admitting, waits for nothing, unloads models. */
  close(): Promise<void>;
}
