/**
 * Sends hostile requests to a running kiln server over raw HTTP (so paths, methods and headers go out exactly as
 * generated) and checks every answer: no transport failure or hang, no 5xx (in-band stream errors included),
 * every 4xx in the caller's error shape. The server's own event-loop delay and RSS are read from /metrics
 * (`kiln_nodejs_eventloop_lag_max_seconds` is the maximum since the previous scrape), once per batch; a batch
 * over the limit is replayed one request at a time to find the request that held the loop.
 */
import { Agent, request as httpRequest } from "node:http";
import type { HostileRequest } from "./hostile-requests.js";

/** One failed check. */
export interface HostileFailure {
  request: HostileRequest;
  problem: "transport" | "hung" | "5xx" | "shape" | "event-loop";
  status?: number;
  message: string;
}

/** What a run measured. */
export interface HostileReport {
  sent: number;
  /** Requests replayed one at a time to find what held the event loop. */
  replayed: number;
  /** Requests sent again because the server had closed their idle kept-alive connection as they were sent. */
  staleRetries: number;
  statuses: Record<string, number>;
  failures: HostileFailure[];
  /** Largest event-loop delay seen by the server, in milliseconds. */
  maxLoopDelayMs: number;
  rssBeforeBytes: number;
  rssAfterBytes: number;
  seconds: number;
}

/** Settings of {@link runHostile}. */
export interface HostileRunOptions {
  url: string;
  key: string;
  concurrency?: number;
  batch?: number;
  /** Event-loop delay over this counts as a failure (default 100 ms). */
  loopLimitMs?: number;
  timeoutMs?: number;
  /** Requests sent before RSS is first read (warm-up: the allocator's first growth is not a leak). */
  warmup?: number;
  /** Called after each batch, for a progress line on long runs. */
  onBatch?(report: HostileReport): void;
}

interface Answer { status: number; headers: Record<string, string | string[] | undefined>; body: string }

/** Runs the requests in batches and checks them. */
export async function runHostile(requests: HostileRequest[], options: HostileRunOptions): Promise<HostileReport> {
  const { concurrency = 6, batch = 16, loopLimitMs = 100, timeoutMs = 120_000, warmup = Math.min(200, Math.floor(requests.length / 5)) } = options;
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency });
  const started = Date.now();
  const report: HostileReport = { sent: 0, replayed: 0, staleRetries: 0, statuses: {}, failures: [], maxLoopDelayMs: 0, rssBeforeBytes: 0, rssAfterBytes: 0, seconds: 0 };
  const scrape = () => scrapeMetrics(options.url, options.key);
  const suspects: { lagMs: number; requests: HostileRequest[] }[] = [];
  for (let offset = 0; offset < requests.length; offset += batch) {
    // The warm-up's first compilations (JIT, templates, grammars) hold the loop once; they are not counted.
    if (offset >= warmup && report.rssBeforeBytes === 0) report.rssBeforeBytes = (await scrape()).rss;
    const slice = requests.slice(offset, offset + batch);
    await mapLimited(slice, concurrency, async (request) => {
      const outcome = await check(request, () => sendRetryingStale(options.url, request, agent, timeoutMs, report));
      report.sent++;
      if (typeof outcome === "number") report.statuses[outcome] = (report.statuses[outcome] ?? 0) + 1;
      else report.failures.push(outcome);
    });
    const { lagMs } = await scrape();
    if (offset < warmup) continue;
    report.maxLoopDelayMs = Math.max(report.maxLoopDelayMs, lagMs);
    if (lagMs > loopLimitMs) suspects.push({ lagMs, requests: slice });
    options.onBatch?.(report);
  }
  report.rssAfterBytes = (await scrape()).rss;
  // Replays what ran while the loop was held, worst batches first, one request at a time, to name the request. The
  // machine may pause the process now and then, so a request counts only when it holds the loop over the limit on
  // two replays in a row.
  const worstFirst = suspects.sort((a, b) => b.lagMs - a.lagMs).flatMap((batch) => batch.requests);
  for (const request of worstFirst.slice(0, 96)) {
    report.replayed++;
    const lags: number[] = [];
    for (let run = 0; run < 2 && (run === 0 || lags[0]! > loopLimitMs); run++) {
      await send(options.url, request, agent, timeoutMs).catch(() => undefined);
      lags.push((await scrape()).lagMs);
    }
    if (lags.length === 2 && Math.min(...lags) > loopLimitMs) {
      report.failures.push({ request, problem: "event-loop", message: `held the event loop ${lags.map(Math.round).join(" and ")} ms` });
    }
  }
  agent.destroy();
  report.seconds = (Date.now() - started) / 1000;
  return report;
}

/** The status of a passing answer, or the failure. */
async function check(request: HostileRequest, sendIt: () => Promise<Answer>): Promise<number | HostileFailure> {
  let answer: Answer;
  try {
    answer = await sendIt();
  } catch (error) {
    const message = error instanceof Error ? `${(error as NodeJS.ErrnoException).code ?? ""} ${error.message}` : String(error);
    return { request, problem: /timed out/.test(message) ? "hung" : "transport", message };
  }
  if (answer.status >= 500) return { request, problem: "5xx", status: answer.status, message: answer.body.slice(0, 300) };
  const type = String(answer.headers["content-type"] ?? "");
  if (answer.status === 200 && type.startsWith("text/event-stream")) {
    const inBand = /"type":\s*"(api_error|server_error)"|"type":"error","error":\{"type":"(api_error|overloaded_error)"/.exec(answer.body);
    if (inBand) return { request, problem: "5xx", status: 200, message: `in-band stream error: ${answer.body.slice(inBand.index, inBand.index + 300)}` };
  }
  if (answer.status >= 400 && request.method !== "HEAD") {
    const problem = shapeProblem(answer, expectsAnthropic(request));
    if (problem) return { request, problem: "shape", status: answer.status, message: problem };
  }
  return answer.status;
}

/** The surface app.ts answers in: Anthropic for /messages paths or Anthropic headers, else OpenAI. */
function expectsAnthropic(request: HostileRequest): boolean {
  const path = request.path.split("?")[0]!;
  if (/\/messages(\/|$)/.test(path) && !/\/\.\.?(\/|$)|%2e/i.test(path)) return true;
  if (/\/(chat\/completions|completions|responses)(\/|$)/.test(path)) return false;
  return "anthropic-version" in request.headers || "x-api-key" in request.headers || /\/messages/.test(path);
}

function shapeProblem(answer: Answer, anthropic: boolean): string | undefined {
  let body: any;
  try {
    body = JSON.parse(answer.body);
  } catch {
    return `not JSON: ${JSON.stringify(answer.body.slice(0, 120))}`;
  }
  const error = body?.error;
  if (anthropic) {
    const ok = body?.type === "error" && typeof error?.type === "string" && typeof error?.message === "string";
    return ok ? undefined : `not Anthropic's shape: ${answer.body.slice(0, 200)}`;
  }
  const nullableString = (value: unknown) => value === null || typeof value === "string";
  const ok = typeof error?.message === "string" && typeof error?.type === "string" && nullableString(error?.param) && nullableString(error?.code);
  return ok ? undefined : `not OpenAI's shape: ${answer.body.slice(0, 200)}`;
}

/**
 * Sends once more when a reused kept-alive connection was reset before any answer: the server closed it as idle
 * while the request was on its way, the race every HTTP/1.1 client retries (Node's docs: `request.reusedSocket`).
 */
async function sendRetryingStale(url: string, request: HostileRequest, agent: Agent, timeoutMs: number, report: HostileReport): Promise<Answer> {
  try {
    return await send(url, request, agent, timeoutMs);
  } catch (error) {
    if (!(error instanceof StaleSocketError)) throw error;
    report.staleRetries++;
    return send(url, request, agent, timeoutMs);
  }
}

class StaleSocketError extends Error {}

function send(url: string, request: HostileRequest, agent: Agent, timeoutMs: number): Promise<Answer> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    // Framed as clients frame bodies: Node would send a DELETE's body unframed, which is the client's error, not the server's.
    const length = request.body === undefined ? {} : { "content-length": String(Buffer.byteLength(request.body)) };
    const req = httpRequest({ host: hostname, port, method: request.method, path: request.path, headers: { ...request.headers, ...length }, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString("utf8") }));
      res.on("error", reject);
    });
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`timed out after ${timeoutMs} ms`)));
    req.on("error", (error: NodeJS.ErrnoException) => {
      reject(req.reusedSocket && error.code === "ECONNRESET" ? new StaleSocketError(error.message) : error);
    });
    req.end(request.body);
  });
}

async function scrapeMetrics(url: string, key: string): Promise<{ lagMs: number; rss: number }> {
  const response = await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${key}` } });
  const text = await response.text();
  const read = (name: string) => Number(new RegExp(`^${name} ([\\d.e+-]+)$`, "m").exec(text)?.[1] ?? NaN);
  return { lagMs: read("kiln_nodejs_eventloop_lag_max_seconds") * 1000, rss: read("kiln_process_resident_memory_bytes") };
}

async function mapLimited<T>(items: T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) await work(items[next++]!);
  }));
}
