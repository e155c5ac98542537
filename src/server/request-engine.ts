/**
 * The engine as one request sees it: the principal's model scope applies to generating, counting and listing; the
 * request is admitted by the server's policy once, before its first generation takes a slot; and every generation
 * is observed into the request's one record. Resolving a model stays unfiltered, so a route that resolves before
 * generating reaches the scope check (403 permission) rather than answering 404 for a model that exists.
 */
import type { Engine, GenerateOptions, GenerationEvent } from "../engine/index.js";
import { lazyIterable } from "../lib/lazy-iterable.js";
import type { AdmissionRequest, Principal, ServerFeatures } from "./context.js";
import { allowsModel, checkModelScope } from "./model-scope.js";
import type { ResponseObserver } from "./response-observer.js";

/** What {@link createRequestEngine} needs besides the engine. */
export interface RequestEngineOptions {
  principal: Principal;
  observer: ResponseObserver;
  /** The policy's admission (rate limits), settled when the record is complete; absent: every request is admitted. */
  admit?: ServerFeatures["admit"];
  /** The request's keep_alive (ms): how long its model stays loaded after it. */
  keepAliveMs?: number;
}

/** Wraps `engine` for one request. */
export function createRequestEngine(engine: Engine, options: RequestEngineOptions): Engine {
  const { principal, observer, keepAliveMs: requestKeepAlive } = options;
  const scope = principal.models;
  let admitted: Promise<void> | undefined;
  const admit = async (request: AdmissionRequest) => {
    const admission = await options.admit?.(principal, request);
    if (admission) observer.whenComplete((record) => admission.settle(record));
  };
  /** The scope check and the request's one admission, before its first generation or embedding. */
  const enter = async (model: string, estimateTokens: () => Promise<number>) => {
    checkModelScope(engine, scope, model);
    await (admitted ??= admit({ model, estimateTokens }));
  };
  const run = (request: { model: string }, events: (options: GenerateOptions) => AsyncIterable<GenerationEvent>,
    estimateTokens: () => Promise<number>, options: GenerateOptions = {}) => lazyIterable(async () => {
    await enter(request.model, estimateTokens);
    // The observer stops the generation when the client leaves, so it can read the usage of what was generated.
    const stop = new AbortController();
    const signal = options.signal ? AbortSignal.any([options.signal, stop.signal]) : stop.signal;
    const keepAlive = options.keepAliveMs ?? requestKeepAlive;
    return observer.observe(request, events({ ...options, signal, ...(keepAlive !== undefined ? { keepAliveMs: keepAlive } : {}) }), () => stop.abort());
  });
  return {
    generate: (request, generateOptions?: GenerateOptions) =>
      run(request, (options) => engine.generate(request, options), () => engine.countTokens(request), generateOptions),
    complete: (request, generateOptions?: GenerateOptions) =>
      run(request, (options) => engine.complete(request, options), async () => estimatePromptTokens(request.prompt), generateOptions),
    embed: async (request, embedOptions?: GenerateOptions) => {
      await enter(request.model, async () => request.inputs.reduce((sum, input) => sum + estimatePromptTokens(input), 0));
      const keepAlive = embedOptions?.keepAliveMs ?? requestKeepAlive;
      return observer.observeEmbedding(request, engine.embed(request, { ...embedOptions, ...(keepAlive !== undefined ? { keepAliveMs: keepAlive } : {}) }));
    },
    countTokens: async (request) => {
      checkModelScope(engine, scope, request.model);
      return engine.countTokens(request);
    },
    listModels: () => engine.listModels().filter((info) => allowsModel(scope, info)),
    findModel: (idOrAlias) => engine.findModel(idOrAlias),
    stats: () => engine.stats(),
    close: () => engine.close(),
  };
}

/** No tokenizer call for raw prompts at admission: about four characters a token (settled to the real count later). */
function estimatePromptTokens(prompt: string | number[]): number {
  return typeof prompt === "string" ? Math.ceil(prompt.length / 4) : prompt.length;
}
