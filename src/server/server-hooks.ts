/**
 * Small wrappers app.ts applies around every request: the server-side output cap on the engine, and the final
 * response headers plus the "request finished" callback (at the end of the stream for SSE, so durations and
 * usage in the response record are complete).
 */
import type { Engine } from "../engine/index.js";

/** Clamps `maxTokens` of every generation to `cap` (undefined: no cap). */
export function withOutputCap(engine: Engine, cap: number | undefined): Engine {
  if (!cap) return engine;
  return {
    ...engine,
    generate: (request, options) => engine.generate({ ...request, maxTokens: Math.min(request.maxTokens, cap) }, options),
    complete: (request, options) => engine.complete({ ...request, maxTokens: Math.min(request.maxTokens, cap) }, options),
    listModels: () => engine.listModels(),
    findModel: (id) => engine.findModel(id),
    countTokens: (request) => engine.countTokens(request),
    stats: () => engine.stats(),
    close: () => engine.close(),
  };
}

/**
 * Returns `response` with `headers` added (existing ones win, except the request ids which are always ours) and
 * calls `onDone(status, clientLeft)` once the body is fully sent or the client went away (`clientLeft`: the stream
 * was cancelled before its end).
 */
export function withResponseRecord(response: Response, headers: Record<string, string>, onDone: (status: number, clientLeft: boolean) => void): Response {
  const merged = new Headers(headers);
  response.headers.forEach((value, key) => {
    if (key !== "request-id" && key !== "x-request-id") merged.set(key, value);
  });
  const streaming = merged.get("content-type")?.startsWith("text/event-stream") && response.body;
  let called = false;
  const done = (clientLeft = false) => {
    if (called) return;
    called = true;
    onDone(response.status, clientLeft);
  };
  if (!streaming || !response.body) {
    done();
    return new Response(response.body, { status: response.status, headers: merged });
  }
  const reader = response.body.getReader();
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      const next = await reader.read().catch(() => ({ done: true as const, value: undefined }));
      if (next.done) {
        controller.close();
        done();
      } else controller.enqueue(next.value);
    },
    async cancel(reason) {
      // The producer stops first: it reads its generation's usage on the way out, and the record must include it.
      await reader.cancel(reason).catch(() => undefined);
      done(true);
    },
  }, { highWaterMark: 0 });
  return new Response(body, { status: response.status, headers: merged });
}
