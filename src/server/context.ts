/**
 * The contract between the HTTP core (app.ts) and the protocol folders (anthropic/, openai/) and the team
 * features (keys, limits, usage, metrics). Protocol routes see only a RequestContext; they never read headers
 * for auth or build ids themselves.
 */
import type { Engine } from "../engine/engine-types.js";
import type { IdFactory } from "../lib/ids.js";

/** Who is calling: a static key from --api-key/KILN_API_KEY, a stored key, or nobody when auth is off. */
export interface Principal {
  /** Stable id for logs and usage (never the key itself): "static:<n>", a stored key id, or "anonymous". */
  keyId: string;
  name?: string;
  /** Models this key may use; undefined = all. */
  models?: string[];
}

/** Checks a presented key. Returns undefined for an unknown, revoked or expired key. */
export interface KeyVerifier {
  verify(key: string): Principal | undefined | Promise<Principal | undefined>;
}

/** Per-request context handed to protocol route handlers. */
export interface RequestContext {
  /** The engine as this principal sees it (wrapped for scopes, limits and usage when configured). */
  engine: Engine;
  principal: Principal;
  /** `req_…`, also sent as `request-id` and `x-request-id`. */
  requestId: string;
  ids: IdFactory;
  /** Unix milliseconds; injectable for golden files. */
  now(): number;
  /** Aborted when the client disconnects. */
  signal: AbortSignal;
}

/** Optional team features plugged into the HTTP core. */
export interface ServerFeatures {
  /** Stored keys, checked after the static ones. */
  keys?: KeyVerifier;
  /** Wraps the engine per principal: scopes, rate limits, usage accounting. */
  wrapEngine?(engine: Engine, principal: Principal, requestId: string): Engine;
  /** Extra headers for every response of this principal (rate-limit headers). */
  responseHeaders?(principal: Principal): Record<string, string> | Promise<Record<string, string>>;
  /** Called once per finished HTTP request (metrics, structured logs). */
  onResponse?(record: ResponseRecord): void;
}

/** One line of the request log / one observation for metrics. */
export interface ResponseRecord {
  requestId: string;
  method: string;
  route: string;
  status: number;
  keyId: string;
  model?: string;
  durationMs: number;
  inputTokens?: number;
  cachedInputTokens?: number;
  outputTokens?: number;
  timeToFirstTokenMs?: number;
  stream?: boolean;
}
