/**
 * The HTTP core: request ids, CORS, auth, body limits, path tolerance, health, the response record, and the
 * mounting of protocol surfaces. Surfaces own formats; this file owns HTTP. Everything a client can send ends in
 * a response in the caller's error shape — never an unhandled exception, never a hung connection.
 */
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { H3 } from "h3";
import { NodeRequest, sendNodeResponse } from "srvx/node";
import { type Engine, EngineError, toEngineError } from "../engine/index.js";
import { newId, type IdFactory } from "../lib/ids.js";
import { anthropicSurface } from "./anthropic/surface.js";
import { ANONYMOUS, createAuthenticator } from "./authenticate.js";
import { decodePathParam, hasDotSegment, matchCanonicalPath } from "./canonical-path.js";
import { createClientErrorHandler, MAX_HEADER_BYTES, type RenderRejection } from "./client-error.js";
import type { Principal, RequestContext, ResponseRecord, RouteDef, ServerFeatures, Surface } from "./context.js";
import { DEFAULT_INPUT_LIMITS, withInputLimits, type InputLimits } from "./input-limits.js";
import { createModelRoutes } from "./models-route.js";
import { openaiSurface } from "./openai/surface.js";
import { assertJsonContentType, DEFAULT_BODY_LIMIT, readJsonBody } from "./read-json-body.js";
import { createRequestEngine } from "./request-engine.js";
import { readKeepAlive } from "./keep-alive.js";
import { jsonResponse } from "./respond.js";
import { createResponseObserver } from "./response-observer.js";
import { withOutputCap, withResponseRecord } from "./server-hooks.js";
import { SseResponse } from "./sse.js";

/** Options of {@link createServer}. */
export interface ServerOptions {
  /** Static API keys (--api-key, KILN_API_KEY). With none and no `features.keys`, auth is off. */
  apiKeys?: string[];
  features?: ServerFeatures;
  /** Protocol surfaces to mount (default: Anthropic and OpenAI). */
  surfaces?: Surface[];
  /** Request body limit in bytes (default 32 MB). */
  maxBodyBytes?: number;
  /** Caps on messages and content blocks per request (default {@link DEFAULT_INPUT_LIMITS}). */
  inputLimits?: InputLimits;
  /** Server-side cap on generated tokens per request, whatever the client asks (e.g. Claude Code's 32000). */
  maxOutputTokens?: number;
  /** Called once per finished request, after `features.onResponse` (request logging). */
  onResponse?(record: ResponseRecord): void;
  ids?: IdFactory;
  /** Unix milliseconds (`created` fields); injectable for golden files. */
  now?(): number;
  /** Monotonic milliseconds for durations and token timings (default `performance.now`). */
  clock?(): number;
}

/** A server not yet listening: `fetch` serves in-process; `listen` binds a port. */
export interface KilnServer {
  fetch(request: Request): Promise<Response>;
  listen(options?: { host?: string; port?: number }): Promise<ListeningServer>;
}

/** A bound server. `url` is the Anthropic base URL; OpenAI clients use `${url}/v1`. */
export interface ListeningServer {
  url: string;
  host: string;
  port: number;
  /** Stops accepting, ends open connections (in-flight generations are aborted) and resolves when closed. */
  close(): Promise<void>;
  /**
   * Graceful stop: refuses new connections at once and new requests on kept-alive ones (overloaded, in the
   * caller's shape), lets in-flight requests finish for up to `timeoutMs`, then ends what remains.
   */
  drain(timeoutMs: number): Promise<{ timedOut: boolean }>;
}

/** Shared by the request handler and the bound server: set once draining starts. */
interface Lifecycle { draining: boolean }

interface Mounted { route: RouteDef; surface?: Surface }

const CORS = {
  "access-control-allow-origin": "*",
  "access-control-expose-headers": "request-id, x-request-id, retry-after, x-should-retry",
};

/** Builds the server. `engine` may still be loading: /health answers 503 and API routes 529/503 until it is ready. */
export function createServer(engine: Engine | Promise<Engine>, options: ServerOptions = {}): KilnServer {
  const surfaces = options.surfaces ?? [anthropicSurface, openaiSurface];
  const mounted = mountRoutes(surfaces);
  const patterns = [...new Set([...mounted.map((m) => m.route.path), "/", "/api/hello", "/health", "/ready", "/metrics"])];
  const features = options.features;
  const auth = createAuthenticator(options.apiKeys ?? [], features?.keys);
  const hasStaticKeys = (options.apiKeys ?? []).some((key) => key.length > 0);
  // Decided per request so keys created (or all revoked) while the server runs take effect without a restart.
  const authOn = () => hasStaticKeys || (features?.keys !== undefined && (features.keysEnforced?.() ?? true));
  const lifecycle: Lifecycle = { draining: false };
  const ids = options.ids ?? newId;
  const now = options.now ?? Date.now;
  const state = trackEngine(engine, features);
  const fallback = surfaces.find((s) => s.name === "openai") ?? surfaces[0] ?? anthropicSurface;
  const anthropic = surfaces.find((s) => s.name === "anthropic") ?? fallback;

  const pickSurface = (path: string, hasHeader: (name: string) => boolean, route?: Mounted): Surface => {
    if (route?.surface) return route.surface;
    if (/\/messages(\/|$)/.test(path)) return anthropic;
    return hasHeader("anthropic-version") || hasHeader("x-api-key") ? anthropic : fallback;
  };
  const renderRejection: RenderRejection = (error, rejected) => {
    const match = matchCanonicalPath(rejected.path.split("?", 1)[0]!, patterns);
    const found = match && mounted.find((m) => m.route.path === match.pattern);
    return pickSurface(match?.path ?? rejected.path, rejected.hasHeader, found).errorResponse(error, ids("req_"));
  };

  async function dispatch(request: Request): Promise<Response> {
    const requestId = ids("req_");
    const signal = request.signal;
    const url = new URL(request.url);
    const match = matchCanonicalPath(url.pathname, patterns);
    const method = request.method === "HEAD" ? "GET" : request.method;
    const found = match && mounted.find((m) => m.route.path === match.pattern && m.route.method === method);
    const observer = createResponseObserver(
      { requestId, method: request.method, route: match?.pattern ?? "unmatched" },
      { clock: options.clock, recordBodies: features?.recordBodies },
    );
    let principal: Principal | undefined;
    let response: Response;
    try {
      response = await route();
    } catch (error) {
      const failure = toEngineError(error);
      observer.fail(failure);
      response = pickSurface(match?.path ?? url.pathname, (name) => request.headers.has(name), found).errorResponse(failure, requestId);
    }
    const extra = principal ? await options.features?.responseHeaders?.(principal) : undefined;
    // While draining, a kept-alive connection is closed after its response so the client reconnects elsewhere.
    const closing: Record<string, string> = lifecycle.draining ? { connection: "close" } : {};
    const headers = { ...CORS, ...extra, ...closing, "request-id": requestId, "x-request-id": requestId };
    return withResponseRecord(response, headers, (status, streamCancelled) => {
      // A stream is cancelled when its client goes; a reply built after its client went has an aborted request.
      const record = streamCancelled || signal.aborted ? observer.clientLeft() : observer.complete(status);
      features?.onResponse?.(record);
      options.onResponse?.(record);
    });

    async function route(): Promise<Response> {
      if (hasDotSegment(requestTarget(request))) throw new EngineError("invalid_request", "path: dot segments (. and ..) are not allowed", { param: "path" });
      if (request.method === "OPTIONS") return preflight(request);
      // Metrics name keys and models: they need a key whenever the API does. Health and readiness stay open.
      if (match?.pattern === "/metrics") principal = await authorize(true);
      const builtin = match && (await answerBuiltin(match.pattern, state, lifecycle, features));
      if (builtin) return builtin;
      if (!match || !found) throw new EngineError("not_found", `${request.method} ${url.pathname}: no such route`);
      if (lifecycle.draining) throw new EngineError("overloaded", "The server is shutting down; retry on another instance", { retryAfter: 5 });
      principal = await authorize(found.route.auth);
      observer.record.keyId = principal.keyId;
      const ready = state.engine;
      if (!ready) throw state.failure ?? new EngineError("overloaded", "The model is still loading; retry shortly", { retryAfter: 2 });
      if (found.route.method === "POST") assertJsonContentType(request.headers);
      const inputLimits = options.inputLimits ?? DEFAULT_INPUT_LIMITS;
      const body = found.route.method === "POST" ? await readJsonBody(request, options.maxBodyBytes ?? DEFAULT_BODY_LIMIT, inputLimits) : undefined;
      const capped = withInputLimits(withOutputCap(ready, options.maxOutputTokens), inputLimits);
      const ctx: RequestContext = {
        engine: createRequestEngine(capped, { principal, observer, admit: features?.admit, keepAliveMs: readKeepAlive(body) }),
        principal,
        requestId,
        ids,
        now,
        signal,
        report: (fields) => Object.assign(observer.record, fields),
      };
      const params = Object.fromEntries(Object.entries(match.params).map(([k, v]) => [k, decodePathParam(v)]));
      return found.route.handler(ctx, { body, params, query: url.searchParams, headers: request.headers });
    }

    async function authorize(needed: boolean): Promise<Principal> {
      if (!needed || !authOn()) return ANONYMOUS;
      const authenticated = await auth.authenticate(request.headers);
      if (!authenticated) throw unauthorized(request.headers);
      return authenticated;
    }
  }

  const app = new H3({ allowMalformedURL: true, silent: true });
  app.all("/**", (event) => dispatch(event.req as Request));
  const fetch = async (request: Request) => app.fetch(request);
  return { fetch, listen: (listenOptions) => listen(toNodeHandler(fetch), lifecycle, renderRejection, listenOptions) };
}

/** Surface routes plus the shared model routes; a path served twice keeps its first definition. */
function mountRoutes(surfaces: Surface[]): Mounted[] {
  const all: Mounted[] = [
    ...createModelRoutes().map((route) => ({ route })),
    ...surfaces.flatMap((surface) => surface.routes.map((route) => ({ route, surface }))),
  ];
  return all.filter((m, i) => all.findIndex((o) => o.route.path === m.route.path && o.route.method === m.route.method) === i);
}

interface EngineState { engine?: Engine; failure?: EngineError }

function trackEngine(engine: Engine | Promise<Engine>, features?: ServerFeatures): EngineState {
  const state: EngineState = {};
  Promise.resolve(engine).then(
    (ready) => {
      state.engine = ready;
      features?.attachEngine?.(ready);
    },
    (error) => { state.failure = new EngineError("backend_failure", `The model failed to load: ${toEngineError(error).message}`); },
  );
  return state;
}

/**
 * Health, readiness, metrics and Claude Code's start-up preconnect (`HEAD /`, `HEAD /api/hello`), answered at once
 * (route() checks the key of /metrics first). `/ready` turns 503 while draining so load balancers stop routing here.
 */
async function answerBuiltin(pattern: string, state: EngineState, lifecycle: Lifecycle, features?: ServerFeatures): Promise<Response | undefined> {
  if (pattern === "/" || pattern === "/api/hello") return new Response("kiln is running\n", { headers: { "content-type": "text/plain; charset=utf-8" } });
  if (pattern === "/metrics") {
    if (!features?.metricsText) return undefined;
    return new Response(await features.metricsText(), { headers: { "content-type": features.metricsContentType ?? "text/plain; version=0.0.4; charset=utf-8" } });
  }
  if (pattern !== "/health" && pattern !== "/ready") return undefined;
  if (pattern === "/ready" && lifecycle.draining) return jsonResponse({ status: "draining" }, 503);
  if (state.engine) return jsonResponse({ status: "ok", models: state.engine.listModels().map((m) => m.id) });
  if (state.failure) return jsonResponse({ status: "error", message: state.failure.message }, 503);
  return jsonResponse({ status: "loading" }, 503);
}

/** The request target as the client sent it: on a Node server the raw one, before URL parsing resolved dot segments. */
function requestTarget(request: Request): string {
  const raw = (request as { runtime?: { node?: { req?: { url?: string } } } }).runtime?.node?.req?.url;
  return raw ?? new URL(request.url).pathname;
}

/** CORS preflight: browsers send it without credentials, so it never needs a key. */
function preflight(request: Request): Response {
  return new Response(null, {
    status: 204,
    headers: {
      "access-control-allow-methods": "GET, POST, OPTIONS",
      "access-control-allow-headers": request.headers.get("access-control-request-headers") ?? "*",
      "access-control-max-age": "86400",
    },
  });
}

function unauthorized(headers: Headers): EngineError {
  const presented = headers.has("x-api-key") || headers.has("authorization");
  return new EngineError("authentication", presented ? "invalid API key" : "missing API key: send it as x-api-key or Authorization: Bearer");
}

/** What a Node server calls per request. */
type NodeHandler = (req: IncomingMessage, res: ServerResponse) => Promise<void>;

/** The app as a Node handler (srvx's), except that an SSE stream writes its frames straight to the socket (sse.ts). */
function toNodeHandler(fetch: (request: Request) => Promise<Response>): NodeHandler {
  return async (req, res) => {
    try {
      const response = await fetch(new NodeRequest({ req, res }) as Request);
      if (response instanceof SseResponse) response.writeTo(res);
      else await sendNodeResponse(res, response);
    } catch {
      // dispatch() answers every failure it sees; this is the socket failing under the send.
      if (res.headersSent) res.destroy();
      else res.writeHead(500).end();
    }
  };
}

async function listen(
  handler: NodeHandler,
  lifecycle: Lifecycle,
  renderRejection: RenderRejection,
  options: { host?: string; port?: number } = {},
): Promise<ListeningServer> {
  const host = options.host ?? "127.0.0.1";
  const server: Server = createHttpServer({ maxHeaderSize: MAX_HEADER_BYTES }, (req, res) => {
    // A connection whose last response ends while draining is idle now: close it rather than wait for keep-alive.
    res.once("close", () => {
      if (lifecycle.draining) setImmediate(() => server.closeIdleConnections());
    });
    return handler(req, res);
  });
  // Generations can take minutes before the first byte on a busy CPU; do not let Node cut requests short.
  server.requestTimeout = 0;
  server.on("clientError", createClientErrorHandler(renderRejection));
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 5456, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : (options.port ?? 5456);
  const shown = host.includes(":") ? `[${host}]` : host;
  return {
    url: `http://${shown}:${port}`,
    host,
    port,
    close: () => new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    }),
    drain: (timeoutMs) => drainServer(server, lifecycle, timeoutMs),
  };
}

function drainServer(server: Server, lifecycle: Lifecycle, timeoutMs: number): Promise<{ timedOut: boolean }> {
  lifecycle.draining = true;
  return new Promise((resolve) => {
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      server.closeAllConnections();
    }, timeoutMs);
    server.close(() => {
      clearTimeout(timer);
      resolve({ timedOut });
    });
    server.closeIdleConnections();
  });
}
