/**
 * What every local backend shares: a request becomes a token plan against the model's own vocabulary and context
 * (generation-plan.ts), the backend runs the plan. Planning happens on the first `next()`, so a bad request
 * rejects it before any event, as the engine's error contract requires.
 */
import type { GenerateOptions, LoadedModel, ModelInfo } from "./backend.js";
import type { GenerationEvent } from "./events.js";
import { planChat, planCompletion, tokenizeChat, type GenerationPlan, type PlanTarget } from "./generation-plan.js";
import type { ChatRequest, CompletionRequest } from "./messages.js";
import { lazyIterable } from "../lib/lazy-iterable.js";

/**
 * Context per sequence when none is asked for, for the webgpu backend: the trained length, capped so a default load
 * stays small. (llama.cpp fits its default to the memory free instead: backends/llama-cpp/fit-context.ts.)
 */
export function defaultContextSize(trainContextSize: number, ctxSize?: number): number {
  return ctxSize ?? Math.min(trainContextSize, 4096);
}

/** A model run by a local backend: the backend supplies the plan target and how to run one plan. */
export abstract class LocalModel implements LoadedModel {
  abstract readonly info: ModelInfo;
  abstract readonly parallel: number;
  /** The vocabulary and context the plans are made for. */
  protected abstract readonly target: PlanTarget;

  /** Runs one plan on a free slot; aborting `signal` ends it with an `aborted` finish. */
  protected abstract run(plan: GenerationPlan, signal?: AbortSignal): AsyncIterable<GenerationEvent>;

  abstract dispose(): Promise<void>;

  generate(request: ChatRequest, options: GenerateOptions = {}): AsyncIterable<GenerationEvent> {
    return lazyIterable(async () => this.run(await planChat(this.target, request), options.signal));
  }

  complete(request: CompletionRequest, options: GenerateOptions = {}): AsyncIterable<GenerationEvent> {
    return lazyIterable(async () => this.run(await planCompletion(this.target, request), options.signal));
  }

  async countTokens(request: ChatRequest): Promise<number> {
    return (await tokenizeChat(this.target, request)).length;
  }
}
