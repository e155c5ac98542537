/**
 * The engine as one principal sees it: model scopes, rate-limit admission before the request takes a slot, and
 * observation of the event stream for usage, metrics and logs. One wrapper per HTTP request.
 */
import type { Engine, GenerationEvent, Usage, ChatRequest, CompletionRequest, GenerateOptions } from "../engine/index.js";
import type { Principal } from "../server/context.js";
import { allowsModel, checkModelScope } from "./model-scope.js";
import type { Admission, Limits, RateLimiter } from "./rate-limiter.js";
import type { RequestNotes } from "./request-notes.js";
import type { TeamMetrics } from "./team-metrics.js";
import type { UsageLedger } from "./usage-ledger.js";

/** What the wrapper reports to; shared by every request of a server. */
export interface TeamEngineDeps {
  limiter: RateLimiter;
  limitsOf(keyId: string): Limits;
  ledger?: UsageLedger;
  metrics: TeamMetrics;
  notes: RequestNotes;
  /** Keep prompts and outputs in the notes (for --log-bodies). */
  logBodies: boolean;
  /** Monotonic milliseconds, for token timings. */
  monotonic(): number;
}

/** Wraps `engine` for one request of `principal`. */
export function wrapTeamEngine(engine: Engine, principal: Principal, requestId: string, deps: TeamEngineDeps): Engine {
  const scope = principal.models;
  const run = async function* (request: ChatRequest | CompletionRequest, events: () => AsyncIterable<GenerationEvent>, estimate: () => Promise<number>) {
    checkModelScope(engine, scope, request.model);
    const limits = deps.limitsOf(principal.keyId);
    const admission = deps.limiter.admit(principal.keyId, limits, limits.tpm === undefined ? 0 : await estimate());
    if (deps.logBodies) deps.notes.update(requestId, { prompt: request });
    yield* observeEvents(events(), { principal, requestId, admission, deps, model: request.model });
  };
  return {
    generate: (request: ChatRequest, options?: GenerateOptions) =>
      run(request, () => engine.generate(request, options), () => engine.countTokens(request)),
    complete: (request: CompletionRequest, options?: GenerateOptions) =>
      // No tokenizer call for raw prompts at admission: about four characters a token, settled to the real count.
      run(request, () => engine.complete(request, options), async () => Math.ceil(request.prompt.length / 4)),
    countTokens: async (request) => {
      checkModelScope(engine, scope, request.model);
      return engine.countTokens(request);
    },
    listModels: () => engine.listModels().filter((info) => allowsModel(scope, info)),
    // Resolution stays unfiltered: a route that resolves the model before generating must reach the scope check
    // in generate (403 permission), not answer 404 for a model that exists.
    findModel: (idOrAlias) => engine.findModel(idOrAlias),
    stats: () => engine.stats(),
    close: () => engine.close(),
  };
}

interface StreamContext {
  principal: Principal;
  requestId: string;
  admission: Admission;
  deps: TeamEngineDeps;
  model: string;
}

/** Passes events through, timing content deltas and settling usage however the stream ends. */
async function* observeEvents(events: AsyncIterable<GenerationEvent>, context: StreamContext): AsyncGenerator<GenerationEvent> {
  const { deps, requestId } = context;
  const began = deps.monotonic();
  let model = context.model;
  let startUsage: Usage | undefined;
  let usage: Usage | undefined;
  let lastDelta: number | undefined;
  let output = "";
  try {
    for await (const event of events) {
      if (event.type === "start") {
        model = event.model;
        const { inputTokens, cachedInputTokens, cacheTier } = event;
        startUsage = { inputTokens, cachedInputTokens, outputTokens: 0, ...(cacheTier ? { cacheTier } : {}) };
      } else if (event.type === "finish") {
        usage = event.usage;
      } else if (isContentDelta(event)) {
        const now = deps.monotonic();
        if (lastDelta === undefined) recordFirstToken(context, model, now - began);
        else deps.metrics.observeInterToken(model, (now - lastDelta) / 1000);
        lastDelta = now;
        if (deps.logBodies) output += deltaText(event);
      }
      yield event;
    }
  } finally {
    // A stream that ended without `finish` (error, client gone) still used its prompt.
    settleUsage(context, model, usage ?? startUsage);
    if (deps.logBodies) deps.notes.update(requestId, { output });
  }
}

function recordFirstToken(context: StreamContext, model: string, elapsedMs: number): void {
  context.deps.metrics.observeFirstToken(model, elapsedMs / 1000);
  context.deps.notes.update(context.requestId, { timeToFirstTokenMs: Math.round(elapsedMs) });
}

function settleUsage(context: StreamContext, model: string, usage: Usage | undefined): void {
  const { deps, principal, requestId, admission } = context;
  admission.settle(usage ? usage.inputTokens + usage.outputTokens : 0);
  deps.notes.update(requestId, { model, ...(usage ? { usage } : {}) });
  if (!usage) return;
  deps.ledger?.record(principal.keyId, model, usage);
  deps.metrics.observeUsage(model, usage);
}

type ContentDelta = Extract<GenerationEvent, { type: "text-delta" | "reasoning-delta" | "tool-call-delta" }>;

function isContentDelta(event: GenerationEvent): event is ContentDelta {
  return event.type === "text-delta" || event.type === "reasoning-delta" || event.type === "tool-call-delta";
}

function deltaText(event: ContentDelta): string {
  return event.type === "tool-call-delta" ? event.json : event.text;
}
