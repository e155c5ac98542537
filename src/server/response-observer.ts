/**
 * The one observer of a request: it owns the request's ResponseRecord and fills it from what happens — the events
 * of its generations (resolved model, time to first token, gaps between tokens, usage with cached tokens and cache
 * tier, failures) and the HTTP outcome (status, duration). The request log, the metrics and the team usage all read
 * the finished record; nothing else measures a request.
 */
import { EngineError, toEngineError, type EmbeddingResult, type GenerationEvent, type Usage } from "../engine/index.js";
import { mapStream } from "../lib/map-stream.js";
import type { ResponseRecord } from "./context.js";
import { addDraftUsage } from "./draft-usage.js";

/** Options of {@link createResponseObserver}. */
export interface ResponseObserverOptions {
  /** Monotonic milliseconds for durations and token timings (default `performance.now`). */
  clock?(): number;
  /** Keep the prompt and the generated text in the record (request logs with bodies). */
  recordBodies?: boolean;
}

/** Observes one HTTP request from arrival to last byte. */
export interface ResponseObserver {
  /** The record being filled; complete once {@link ResponseObserver.complete} ran. */
  readonly record: ResponseRecord;
  /**
   * Passes one generation's events through, recording them on the way (a thrown failure too, then rethrown).
   * Generations of one request (n choices, several prompts) add up in the one record. When the reader stops early
   * (the client went away), `abort` stops the generation and the rest is read to its finish for the usage: what was
   * generated counts, whether or not the client stayed to read it.
   */
  observe(prompt: unknown, events: AsyncIterable<GenerationEvent>, abort?: () => void): AsyncIterable<GenerationEvent>;
  /** Awaits one embedding call, recording its resolved model and input tokens (or its failure, then rethrown). */
  observeEmbedding(prompt: unknown, result: Promise<EmbeddingResult>): Promise<EmbeddingResult>;
  /** Records why the request failed. */
  fail(error: EngineError): void;
  /** Registers what must see the complete record first (the policy settling the request's usage). */
  whenComplete(settle: (record: ResponseRecord) => void): void;
  /** Completes the record with the response status and the duration, settles it, and returns it. */
  complete(status: number): ResponseRecord;
  /**
   * Completes the record of a response whose client went away before its end: status 499 (the status proxies log
   * for a client that closed the connection) with an `aborted` failure, whatever status the response began with.
   */
  clientLeft(): ResponseRecord;
}

/** The status recorded when the client closed the connection before the response ended. */
export const CLIENT_CLOSED_STATUS = 499;

/** Starts observing a request that arrived now. */
export function createResponseObserver(start: Pick<ResponseRecord, "requestId" | "method" | "route">, options: ResponseObserverOptions = {}): ResponseObserver {
  const clock = options.clock ?? (() => performance.now());
  const arrived = clock();
  const record: ResponseRecord = { ...start, status: 0, keyId: "anonymous", durationMs: 0 };
  // Usage of the generations that finished, plus the prompt of one still running (or cut short).
  const finished: Usage = { inputTokens: 0, cachedInputTokens: 0, outputTokens: 0 };
  const settlers: Array<(record: ResponseRecord) => void> = [];
  let firstStarted: number | undefined;
  const fail = (error: EngineError) => void (record.error = describeFailure(error));
  const reportUsage = (running?: Usage) => {
    const total = running ? addUsage(finished, running) : finished;
    Object.assign(record, { inputTokens: total.inputTokens, cachedInputTokens: total.cachedInputTokens, outputTokens: total.outputTokens });
    record.cacheTier ??= total.cacheTier;
    if (total.draft) record.draft = total.draft;
  };
  const addFinished = (usage: Usage) => {
    Object.assign(finished, addUsage(finished, usage));
    reportUsage();
  };

  /** Records what an event says about usage and failure. */
  const account = (event: GenerationEvent) => {
    if (event.type === "start") {
      record.model = event.model;
      reportUsage({ inputTokens: event.inputTokens, cachedInputTokens: event.cachedInputTokens, outputTokens: 0, cacheTier: event.cacheTier });
    } else if (event.type === "finish") {
      addFinished(event.usage);
    } else if (event.type === "error") {
      fail(event.error);
    }
  };

  function observe(prompt: unknown, events: AsyncIterable<GenerationEvent>, abort?: () => void): AsyncIterable<GenerationEvent> {
    const started = clock();
    firstStarted ??= started;
    let lastDelta: number | undefined;
    if (options.recordBodies) Object.assign(record, { prompt, output: record.output ?? "" });
    return mapStream(events, {
      map: (event) => {
        account(event);
        if (event.type === "tool-call-start") {
          // The log shows which tool a call's arguments belong to.
          if (options.recordBodies) record.output += `${record.output ? "\n" : ""}[tool call ${event.name}] `;
        } else if (isContentDelta(event)) {
          const now = clock();
          if (record.timeToFirstTokenMs === undefined) record.timeToFirstTokenMs = now - firstStarted!;
          else if (lastDelta !== undefined) (record.interTokenMs ??= []).push(now - lastDelta);
          lastDelta = now;
          if (options.recordBodies) record.output += event.type === "tool-call-delta" ? event.json : event.text;
        }
        return event;
      },
      fail: (error) => {
        fail(toEngineError(error));
        throw error;
      },
      leave: (iterator) => readToFinish(iterator, abort),
    });
  }

  async function observeEmbedding(prompt: unknown, result: Promise<EmbeddingResult>): Promise<EmbeddingResult> {
    if (options.recordBodies) record.prompt = prompt;
    try {
      const embedded = await result;
      record.model = embedded.model;
      addFinished({ inputTokens: embedded.inputTokens, cachedInputTokens: 0, outputTokens: 0 });
      return embedded;
    } catch (error) {
      fail(toEngineError(error));
      throw error;
    }
  }

  /** The reader left early: stop the generation and account for the rest of its events (without a stop, close it). */
  async function readToFinish(iterator: AsyncIterator<GenerationEvent>, abort: (() => void) | undefined): Promise<void> {
    if (!abort) {
      await iterator.return?.();
      return;
    }
    abort();
    try {
      for (let next = await iterator.next(); !next.done; next = await iterator.next()) account(next.value);
    } catch {
      // An aborted generation may end by throwing; what it generated before is already accounted for.
    }
  }

  const complete = (status: number) => {
    Object.assign(record, { status, durationMs: clock() - arrived });
    for (const settle of settlers) settle(record);
    return record;
  };

  return {
    record,
    observe,
    observeEmbedding,
    fail,
    whenComplete: (settle) => void settlers.push(settle),
    complete,
    clientLeft() {
      fail(new EngineError("aborted", "the client closed the connection before the response ended"));
      return complete(CLIENT_CLOSED_STATUS);
    },
  };
}

/** A failure as the request log records it. */
export function describeFailure(error: EngineError): string {
  return `${error.code}: ${error.message}`;
}

function addUsage(a: Usage, b: Usage): Usage {
  const cacheTier = a.cacheTier ?? b.cacheTier;
  const draft = addDraftUsage(a.draft, b.draft);
  return {
    inputTokens: a.inputTokens + b.inputTokens,
    cachedInputTokens: a.cachedInputTokens + b.cachedInputTokens,
    outputTokens: a.outputTokens + b.outputTokens,
    ...(cacheTier ? { cacheTier } : {}),
    ...(draft ? { draft } : {}),
  };
}

type ContentDelta = Extract<GenerationEvent, { type: "text-delta" | "reasoning-delta" | "tool-call-delta" }>;

function isContentDelta(event: GenerationEvent): event is ContentDelta {
  return event.type === "text-delta" || event.type === "reasoning-delta" || event.type === "tool-call-delta";
}
