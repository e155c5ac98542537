/**
 * Reads a JSON request body with a size limit. Over the limit the rest of the body is drained (up to a bound)
 * before answering, so the client reads a clean 413 instead of a reset connection.
 */
import { EngineError } from "../engine/index.js";
import { readTopLevelInteger } from "../lib/json-integer.js";
import { JsonTooDeepError, parseBoundedJson } from "../lib/json-depth.js";
import { countBodyOffLoop } from "./body-count-thread.js";
import { checkInputCounts, type InputLimits } from "./input-limits.js";

/** 32 MB, the real API's limit for Messages and count_tokens. */
export const DEFAULT_BODY_LIMIT = 32 * 1024 * 1024;

const DRAIN_LIMIT_FACTOR = 4;

/**
 * Bodies from this size up are counted against the caps on a worker thread before they are parsed here: parsing and
 * validating 1 MiB of JSON costs the loop about 30 ms on a small CPU, and it grows with the body.
 */
export const OFF_LOOP_BODY_BYTES = 1024 * 1024;

/**
 * Refuses a body declared as something else than JSON (`text/plain`, form data: what `curl -d` and a bare
 * `fetch(url, {body})` send) with 415, as the vendors' APIs do, rather than guessing. A body with no content type
 * at all is read as JSON. JSON types are `application/json` and any `+json` type, with any parameters.
 */
export function assertJsonContentType(headers: Headers): void {
  const type = headers.get("content-type")?.split(";", 1)[0]!.trim().toLowerCase();
  if (!type || type === "application/json" || /^application\/[\w.+-]+\+json$/.test(type)) return;
  throw new EngineError("unsupported_media_type", `content-type: expected application/json, got ${type}`, { param: "content-type" });
}

/**
 * Parses the body as JSON; throws `request_too_large` (413) or `invalid_request` (400, also for too deep nesting,
 * and for a large body over `inputLimits`, which is refused before it is parsed on the event loop).
 */
export async function readJsonBody(request: Request, limit = DEFAULT_BODY_LIMIT, inputLimits?: InputLimits): Promise<unknown> {
  const bytes = await readLimited(request, limit);
  const text = new TextDecoder().decode(bytes).replace(/^\uFEFF/, "");
  if (text.trim() === "") throw new EngineError("invalid_request", "body: a JSON object is required", { param: "body" });
  const count = inputLimits && bytes.byteLength >= OFF_LOOP_BODY_BYTES ? await countBodyOffLoop(text) : undefined;
  if (count && "invalid" in count) throw invalidJson(count.invalid);
  if (count) checkInputCounts(count, inputLimits!);
  let body: unknown;
  try {
    body = parseBoundedJson(text);
  } catch (error) {
    if (error instanceof JsonTooDeepError) throw tooDeep(error);
    throw invalidJson(error instanceof Error ? error.message : String(error));
  }
  return withExactSeed(body, text);
}

/**
 * `seed` is a signed 64-bit integer (OpenAI, vLLM), but JSON.parse reads 2^63 − 1 and 2^63, or −2^63 and −2^63 − 1,
 * as the same double (±2^63, the only doubles that stand for integers both inside and outside the range). For those
 * two values the seed's digits are re-read from the text, as a BigInt, so the range check is exact.
 */
function withExactSeed(body: unknown, text: string): unknown {
  if (typeof body !== "object" || body === null || !("seed" in body) || Math.abs(Number(body.seed)) !== 2 ** 63) return body;
  const exact = readTopLevelInteger(text, "seed");
  return exact === undefined ? body : { ...body, seed: exact };
}

function invalidJson(detail: string): EngineError {
  return new EngineError("invalid_request", `body: invalid JSON (${detail})`, { param: "body" });
}

/** A nesting-limit failure as a 400 naming the field path where the limit was crossed. */
export function tooDeep(error: JsonTooDeepError): EngineError {
  return new EngineError("invalid_request", error.message, { param: error.path.replace(/\.…$/, "") }, { cause: error });
}

async function readLimited(request: Request, limit: number): Promise<Uint8Array> {
  const tooLarge = () => new EngineError("request_too_large", `Request exceeds the maximum allowed number of bytes (${limit})`);
  if (!request.body) return new Uint8Array();
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = request.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit * DRAIN_LIMIT_FACTOR) {
      await reader.cancel().catch(() => {});
      throw tooLarge();
    }
    if (size <= limit) chunks.push(value);
  }
  if (size > limit) throw tooLarge();
  return concat(chunks, size);
}

function concat(chunks: Uint8Array[], size: number): Uint8Array {
  const out = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    out.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return out;
}
