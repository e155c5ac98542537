/**
 * The contract between the HTTP core (app.ts) and the protocol folders (anthropic/, openai/) and the team
 * features (keys, limits, usage, metrics). Protocol routes see only a RequestContext; they never read headers
 * for auth or build ids themselves.
 */
import type { CacheTier, Engine } from "../engine/index.js";
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
  /** Adds facts to this request's ResponseRecord (model, usage, time to first token); optional for callers outside app.ts. */
  report?(fields: Partial<ResponseRecord>): void;
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
  /**
   * Whether `keys` is enforced for this request (asked per request; default: always when `keys` is given). Lets a
   * server started without keys begin requiring them as soon as one is created. Static keys are enforced regardless.
   */
  keysEnforced?(): boolean;
  /** The Prometheus text exposition served at GET /metrics (behind a key whenever the API is; /health never is). */
  metricsText?(): Promise<string>;
  /** The Content-Type of `metricsText()` (default: Prometheus text 0.0.4). */
  metricsContentType?: string;
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
  /** Where the cached prefix came from: "ram" or "disk". */
  cacheTier?: CacheTier;
  outputTokens?: number;
  timeToFirstTokenMs?: number;
  stream?: boolean;
  /** Why the request failed (`code: message`), before the response began or in-band after it. */
  error?: string;
}

/** What a route handler receives besides the context: the parsed request. */
export interface RouteInput {
  /** Parsed JSON body (undefined for GET). Invalid JSON never reaches a handler (app.ts answers 400). */
  body: unknown;
  /** Path parameters, already percent-decoded (e.g. `id` of /v1/models/:id, which may contain `/`). */
  params: Record<string, string>;
  query: URLSearchParams;
  headers: Headers;
}

/** One route of a protocol surface. Handlers return a web Response (JSON or SSE). */
export interface RouteDef {
  method: "GET" | "POST";
  /** Path under the server root, e.g. "/v1/messages"; app.ts also serves prefixed and doubled-slash forms. */
  path: string;
  /** Whether the route needs an API key (everything under /v1 does). */
  auth: boolean;
  handler(ctx: RequestContext, input: RouteInput): Promise<Response>;
}

/** A wire protocol: its routes and its error shape. app.ts owns HTTP; surfaces own formats. */
export interface Surface {
  name: "anthropic" | "openai";
  routes: RouteDef[];
  /** Renders an EngineError in this surface's shape with the right status and headers. */
  errorResponse(error: import("../engine/index.js").EngineError, requestId: string): Response;
}

/**
 * The routes plus each `/v1/…` route again without the `/v1` prefix: clients configured with a base URL that lacks
 * `/v1` (llama-server and vLLM answer there too) build `/chat/completions`, `/models`, `/messages`.
 */
export function withUnversionedPaths(routes: RouteDef[]): RouteDef[] {
  const unversioned = routes.filter((route) => route.path.startsWith("/v1/")).map((route) => ({ ...route, path: route.path.slice(3) }));
  return [...routes, ...unversioned];
}
