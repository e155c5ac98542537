/**
 * The contract between the HTTP core (app.ts) and the protocol folders (anthropic/, openai/) and the team
 * features (keys, limits, usage, metrics). Protocol routes see only a RequestContext; they never read headers
 * for auth or build ids themselves.
 */
import type { CacheTier, DraftUsage, Engine } from "../engine/index.js";
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
  /**
   * The engine as this request sees it: generations are checked against the principal's model scope, admitted by
   * the team policy and observed into the request's ResponseRecord (request-engine.ts).
   */
  engine: Engine;
  principal: Principal;
  /** `req_…`, also sent as `request-id` and `x-request-id`. */
  requestId: string;
  ids: IdFactory;
  /** Unix milliseconds; injectable for golden files. */
  now(): number;
  /** Aborted when the client disconnects. */
  signal: AbortSignal;
  /** Adds what the route knows to this request's ResponseRecord (requested model, stream); optional outside app.ts. */
  report?(fields: Partial<ResponseRecord>): void;
}

/** Optional team features plugged into the HTTP core. */
export interface ServerFeatures {
  /** Stored keys, checked after the static ones. */
  keys?: KeyVerifier;
  /**
   * Admits a request of `principal` before its first generation takes a slot (rate limits), or throws (rate_limited).
   * The admission is settled with the request's record once that is complete.
   */
  admit?(principal: Principal, request: AdmissionRequest): Promise<Admission>;
  /** Keep each request's prompt and generated text in its record (request logs with bodies). */
  recordBodies?: boolean;
  /** Called once the engine is ready (metrics read its live figures). */
  attachEngine?(engine: Engine): void;
  /** Extra headers for every response of this principal (rate-limit headers). */
  responseHeaders?(principal: Principal): Record<string, string> | Promise<Record<string, string>>;
  /** Called once per finished HTTP request, after the admission was settled (metrics, structured logs). */
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

/** What the policy is told about a request it admits. */
export interface AdmissionRequest {
  /** The model as the client named it. */
  model: string;
  /** The request's prompt tokens, or an estimate; asked only when a token limit applies. */
  estimateTokens(): Promise<number>;
}

/** An admitted request: settled once, with its complete record (real usage, outcome). */
export interface Admission {
  settle(record: ResponseRecord): void;
}

/**
 * Everything known about one finished request, filled by its one observer (response-observer.ts): the request log,
 * the metrics and the team usage all read it.
 */
export interface ResponseRecord {
  requestId: string;
  method: string;
  route: string;
  status: number;
  keyId: string;
  /** The model as the client named it, then as the engine resolved it once generation started. */
  model?: string;
  /** Milliseconds from the request's arrival to its last byte (or the client going away). */
  durationMs: number;
  /** Usage summed over the request's generations (n choices, several prompts); a generation cut short counts its prompt. */
  inputTokens?: number;
  cachedInputTokens?: number;
  /** Where the cached prefix came from: "ram" or "disk". */
  cacheTier?: CacheTier;
  outputTokens?: number;
  /** Tokens a draft model proposed and those the model kept (speculative decoding). */
  draft?: DraftUsage;
  /** From the start of the first generation to its first generated delta (text, reasoning or tool call). */
  timeToFirstTokenMs?: number;
  /** Gaps between successive generated deltas within each generation. */
  interTokenMs?: number[];
  stream?: boolean;
  /** Why the request failed (`code: message`), before the response began or in-band after it. */
  error?: string;
  /** Only with `recordBodies`: the request as the engine received it, and the generated text. */
  prompt?: unknown;
  output?: string;
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
