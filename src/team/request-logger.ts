/**
 * The request log: one JSON line per finished request (request id, key id — never the key — model, status,
 * tokens, timings), or one readable line when writing to a terminal. Prompts and outputs only with --log-bodies.
 */
import type { ResponseRecord } from "../server/context.js";

export const LOG_LEVELS = ["debug", "info", "warn", "error", "silent"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** Options of {@link createRequestLogger}. */
export interface RequestLoggerOptions {
  level?: LogLevel;
  logBodies?: boolean;
  /** Where lines go (default: stderr). */
  write?(line: string): void;
  /** Readable lines instead of JSON (default: when stderr is a terminal). */
  pretty?: boolean;
  clock?(): number;
}

/** Logs one finished request from its record. */
export type RequestLogger = (record: ResponseRecord) => void;

/** A logger writing each finished request as one line. */
export function createRequestLogger(options: RequestLoggerOptions = {}): RequestLogger {
  const threshold = LOG_LEVELS.indexOf(options.level ?? "info");
  const write = options.write ?? ((line: string) => void process.stderr.write(`${line}\n`));
  const pretty = options.pretty ?? Boolean(process.stderr.isTTY);
  const clock = options.clock ?? Date.now;
  return (record) => {
    const level = levelOf(record);
    if (LOG_LEVELS.indexOf(level) < threshold) return;
    const entry = toLogEntry(record, options.logBodies ?? false);
    write(pretty ? formatPretty(clock(), level, entry) : JSON.stringify({ time: new Date(clock()).toISOString(), level, msg: "request", ...entry }));
  };
}

/** Health and readiness probes: a supervisor or load balancer polls them, and 503 is their normal "not yet" answer. */
const PROBE_ROUTES = new Set(["/health", "/ready"]);

/**
 * A record's level. A probe's 503 (loading, draining) is debug: polling a starting server must not fill the log with
 * errors (a model that fails to load is reported once, at start-up). 503 and 529 elsewhere are the overloaded or
 * still-loading answers the client is told to retry: warn. Other 5xx are kiln's failures: error.
 */
function levelOf({ status, route }: ResponseRecord): LogLevel {
  if (status === 503 && PROBE_ROUTES.has(route)) return "debug";
  if (status === 503 || status === 529) return "warn";
  return status >= 500 ? "error" : status >= 400 ? "warn" : "info";
}

/** The logged fields, in a fixed order; timings in whole milliseconds. */
function toLogEntry(record: ResponseRecord, logBodies: boolean): Record<string, unknown> {
  const entry: Record<string, unknown> = {
    requestId: record.requestId,
    method: record.method,
    route: record.route,
    status: record.status,
    keyId: record.keyId,
    model: record.model,
    stream: record.stream,
    durationMs: Math.round(record.durationMs),
    timeToFirstTokenMs: record.timeToFirstTokenMs === undefined ? undefined : Math.round(record.timeToFirstTokenMs),
    inputTokens: record.inputTokens,
    cachedInputTokens: record.cachedInputTokens,
    cacheTier: record.cacheTier,
    outputTokens: record.outputTokens,
    draftTokens: record.draft?.drafted,
    acceptedDraftTokens: record.draft?.accepted,
    error: record.error,
  };
  if (logBodies) Object.assign(entry, { prompt: record.prompt, output: record.output });
  return Object.fromEntries(Object.entries(entry).filter(([, value]) => value !== undefined));
}

function formatPretty(now: number, level: LogLevel, entry: Record<string, unknown>): string {
  const time = new Date(now).toISOString().slice(11, 19);
  const parts = [time, level.toUpperCase().padEnd(5), entry.method, entry.route, entry.status, entry.model ?? "-", `${entry.durationMs}ms`];
  if (entry.timeToFirstTokenMs !== undefined) parts.push(`ttft ${entry.timeToFirstTokenMs}ms`);
  if (entry.inputTokens !== undefined) parts.push(`in ${entry.inputTokens} (cached ${entry.cachedInputTokens ?? 0}${entry.cacheTier ? ` ${entry.cacheTier}` : ""}) out ${entry.outputTokens ?? 0}`);
  if (entry.draftTokens !== undefined) parts.push(`draft ${entry.acceptedDraftTokens}/${entry.draftTokens} accepted`);
  parts.push(`key ${entry.keyId}`, String(entry.requestId));
  if (entry.error !== undefined) parts.push(`error ${entry.error}`);
  const bodies = entry.prompt === undefined ? "" : `\n  prompt: ${JSON.stringify(entry.prompt)}\n  output: ${JSON.stringify(entry.output ?? "")}`;
  return parts.join(" ") + bodies;
}
