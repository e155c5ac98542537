/**
 * One GGUF served by llama.cpp: a single context holding `parallel` sequences of `ctxSize` tokens each (node-llama-cpp
 * allocates contextSize × sequences KV cells, so every sequence can hold a full ctxSize), a slot pool with prefix
 * affinity over those sequences, and the request → token plan translation.
 */
import type { BatchingOptions, Llama, LlamaContext, LlamaModel, Token } from "node-llama-cpp";
import type { GenerateOptions, LoadedModel, ModelInfo } from "../../backend.js";
import { contextOverflow, EngineError } from "../../errors.js";
import type { GenerationEvent } from "../../events.js";
import type { ChatRequest, CompletionRequest } from "../../messages.js";
import { renderChatPrompt, type PromptTemplate } from "../../text/render-prompt.js";
import { responseFormatGrammar, toolCallGrammar } from "../../text/grammar.js";
import { newId, type IdFactory } from "../../../lib/ids.js";
import { DecodeBarrier } from "./decode-barrier.js";
import { describeModel, hasInfillTokens } from "./describe-model.js";
import { loadGgufModel } from "./load-llama.js";
import { runGeneration, type GenerationPlan, type GenerationRuntime } from "./run-generation.js";
import { SlotPool, type PrefixDivergence } from "./slot-pool.js";

/** How to load and serve one model. */
export interface LlamaCppModelOptions {
  id: string;
  path: string;
  aliases?: string[];
  /** The opened bindings (shared by every model of an engine). */
  llama: Llama;
  /** Sequences decoded together in one context. */
  parallel: number;
  /** Tokens per sequence (prompt + output). Default: min(train context, 4096). */
  ctxSize?: number;
  /** CPU threads for evaluation. */
  threads: number;
  /** Reuse cached prompt prefixes across requests (default true). */
  prefixCache?: boolean;
  /**
   * Keep generating sequences in step so each decode step batches all of them (default true; false: measure what
   * the barrier gains).
   */
  decodeBarrier?: boolean;
  /** node-llama-cpp batching options for the context (measurements record the dispatched batches through it). */
  batching?: BatchingOptions;
  ids?: IdFactory;
  /** Debug hook: where a prompt diverged from the best cached sequence. */
  onPrefixDivergence?(modelId: string, info: PrefixDivergence): void;
}

const DEFAULT_CTX_SIZE = 4096;

/** Loads the file and creates its context; failures are `backend_failure` errors naming the file. */
export async function loadLlamaCppModel(options: LlamaCppModelOptions): Promise<LlamaCppModel> {
  const model = await loadGgufModel(options.llama, options.path);
  const ctxSize = options.ctxSize ?? Math.min(model.trainContextSize, DEFAULT_CTX_SIZE);
  let context: LlamaContext;
  try {
    context = await model.createContext({ contextSize: ctxSize, sequences: options.parallel, threads: options.threads, batching: options.batching });
  } catch (error) {
    await model.dispose();
    const cause = error instanceof Error ? error.message : String(error);
    throw new EngineError("backend_failure", `cannot create a context of ${options.parallel} × ${ctxSize} tokens for ${options.path}: ${cause}`, { path: options.path }, { cause: error });
  }
  const info = await describeModel(options.llama, model, context, { id: options.id, aliases: options.aliases ?? [], path: options.path }, ctxSize);
  return new LlamaCppModel(options, model, context, info, ctxSize);
}

export class LlamaCppModel implements LoadedModel {
  readonly parallel: number;
  private readonly runtime: GenerationRuntime;
  private readonly template: PromptTemplate;

  constructor(
    options: LlamaCppModelOptions,
    private readonly model: LlamaModel,
    private readonly context: LlamaContext,
    readonly info: ModelInfo,
    private readonly ctxSize: number,
  ) {
    this.parallel = options.parallel;
    const sequences = Array.from({ length: options.parallel }, () => context.getSequence());
    const pool = new SlotPool(sequences, {
      prefixCache: options.prefixCache ?? true,
      detokenize: (tokens) => model.detokenize(tokens, true),
      onDivergence: options.onPrefixDivergence && ((divergence) => options.onPrefixDivergence?.(info.id, divergence)),
    });
    const barrier = options.decodeBarrier === false ? undefined : new DecodeBarrier();
    this.runtime = { llama: options.llama, model, pool, ids: options.ids ?? newId, barrier };
    this.template = {
      source: model.fileInfo.metadata.tokenizer?.chat_template,
      bosToken: model.tokens.bosString ?? undefined,
      eosToken: model.tokens.eosString ?? undefined,
    };
  }

  async *generate(request: ChatRequest, options: GenerateOptions = {}): AsyncGenerator<GenerationEvent> {
    yield* runGeneration(this.runtime, this.planChat(request), options.signal);
  }

  async *complete(request: CompletionRequest, options: GenerateOptions = {}): AsyncGenerator<GenerationEvent> {
    yield* runGeneration(this.runtime, this.planCompletion(request), options.signal);
  }

  async countTokens(request: ChatRequest): Promise<number> {
    return this.tokenizeChat(request).length;
  }

  async dispose(): Promise<void> {
    await this.context.dispose();
    await this.model.dispose();
  }

  private tokenizeChat(request: ChatRequest): Token[] {
    rejectImages(request);
    return this.model.tokenize(renderChatPrompt(request, this.template), true);
  }

  private planChat(request: ChatRequest): GenerationPlan {
    const prompt = this.tokenizeChat(request);
    const toolsOn = (request.tools?.length ?? 0) > 0 && request.toolChoice?.type !== "none";
    const choice = request.toolChoice ?? { type: "auto" as const };
    const toolGrammar = toolsOn ? toolCallGrammar(request.tools ?? [], choice) : undefined;
    const formatGrammar = toolGrammar || !request.responseFormat ? undefined : responseFormatGrammar(request.responseFormat);
    return {
      modelId: this.info.id,
      prompt,
      maxTokens: this.fitToContext(prompt.length, request.maxTokens),
      sampling: request.sampling,
      stop: request.stop ?? [],
      grammar: toolGrammar ? { text: toolGrammar, param: "tools" } : formatGrammar ? { text: formatGrammar, param: "response_format" } : undefined,
      tools: toolsOn ? { names: (request.tools ?? []).map((tool) => tool.name), parallel: "parallel" in choice ? choice.parallel ?? true : true } : undefined,
    };
  }

  private planCompletion(request: CompletionRequest): GenerationPlan {
    const prompt = request.suffix === undefined ? this.tokenizeRaw(request.prompt) : this.tokenizeInfill(request.prompt, request.suffix);
    if (prompt.length === 0) throw new EngineError("invalid_request", "prompt: must not be empty", { param: "prompt" });
    return {
      modelId: this.info.id,
      prompt,
      maxTokens: this.fitToContext(prompt.length, request.maxTokens),
      sampling: request.sampling,
      stop: request.stop ?? [],
      logprobs: request.logprobs,
    };
  }

  /** The raw prompt as-is (special tokens recognised), with BOS in front when the model expects one. */
  private tokenizeRaw(text: string): Token[] {
    const tokens = this.model.tokenize(text, true);
    const bos = this.model.tokens.bos;
    const wantsBos = this.model.tokens.shouldPrependBosToken && bos != null && tokens[0] !== bos;
    return wantsBos ? [bos, ...tokens] : tokens;
  }

  /** Fill-in-the-middle in prefix-suffix-middle order, as llama.cpp's server builds it. */
  private tokenizeInfill(prefix: string, suffix: string): Token[] {
    if (!hasInfillTokens(this.model)) {
      throw new EngineError("invalid_request", `suffix: model ${this.info.id} does not support fill-in-the-middle`, { param: "suffix" });
    }
    const { prefix: pre, suffix: suf, middle } = this.model.tokens.infill as { prefix: Token; suffix: Token; middle: Token };
    return [pre, ...this.model.tokenize(prefix, true), suf, ...this.model.tokenize(suffix, true), middle];
  }

  /** Refuses a prompt that leaves no room to generate; clamps the output budget to the context left. */
  private fitToContext(promptTokens: number, maxTokens: number): number {
    if (!Number.isInteger(maxTokens) || maxTokens < 1) {
      throw new EngineError("invalid_request", "max_tokens: must be a positive integer", { param: "max_tokens" });
    }
    if (promptTokens + 1 > this.ctxSize) throw contextOverflow(promptTokens, this.ctxSize);
    return Math.min(maxTokens, this.ctxSize - promptTokens);
  }
}

/** This backend has no vision: an image anywhere in the conversation is a client error naming where it is. */
function rejectImages(request: ChatRequest): void {
  request.messages.forEach((message, m) => {
    const p = message.parts.findIndex((part) => part.type === "image");
    if (p >= 0) throw new EngineError("invalid_request", `messages.${m}.content.${p}: this model does not accept images`, { param: `messages.${m}.content.${p}` });
  });
}
