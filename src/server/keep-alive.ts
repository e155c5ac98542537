/**
 * `keep_alive`, kiln's extension field on every generating request of both surfaces (as Ollama's API has it): how
 * long the model stays loaded after this request. Seconds or a duration such as "5m"; 0 unloads it when the request
 * ends; -1 keeps it loaded.
 */
import { EngineError } from "../engine/index.js";
import { parseDuration } from "../lib/duration.js";

/** The request body's keep-alive in ms; undefined when absent or null; invalid_request naming the field otherwise. */
export function readKeepAlive(body: unknown): number | undefined {
  const value = body !== null && typeof body === "object" ? (body as { keep_alive?: unknown }).keep_alive : undefined;
  if (value === undefined || value === null) return undefined;
  const ms = typeof value === "number" || typeof value === "string" ? parseDuration(value) : undefined;
  if (ms === undefined) {
    throw new EngineError("invalid_request", "keep_alive: expected seconds or a duration such as \"5m\" (0: unload after this request, -1: keep loaded)", { param: "keep_alive" });
  }
  return ms;
}
