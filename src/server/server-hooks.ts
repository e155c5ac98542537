/**
 * Small wrappers app.ts applies around every request: the server-side output cap on the engine, and the final
 * response headers plus the "request finished" callback (at the end of the stream for SSE, so durations and
 * usage in the response record are complete).
 */
import type { Engine } from "../engine/index.js";
import { SseResponse } from "./sse.js";

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
  if (response instanceof SseResponse) {
    // The stream is sent as it is, so a Node server can write its frames straight to the socket.
    for (const [name, value] of Object.entries(headers)) {
      if (!response.headers.has(name) || name === "request-id" || name === "x-request-id") response.headers.set(name, value);
    }
    response.onClose((clientLeft) => onDone(response.status, clientLeft));
    return response;
  }
  const merged = new Headers(headers);
  response.headers.forEach((value, key) => {
    if (key !== "request-id" && key !== "x-request-id") merged.set(key, value);
  });
  onDone(response.status, false);
  return new Response(response.body, { status: response.status, headers: merged });
}
