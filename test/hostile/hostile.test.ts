/**
 * The hostile-input run: generated malformed and mutated requests across every endpoint of both surfaces,
 * against a real `kiln serve` process on loopback with the real default model (a static key, and
 * --max-output-tokens 1 so valid requests stay cheap). It asserts no crash, no 5xx, every 4xx in the surface's
 * error shape, flat memory and no request holding the server's event loop over 100 ms.
 *
 * CI runs a bounded sample; the full run is `npm run hostile` (KILN_HOSTILE_COUNT=10000). KILN_HOSTILE_SEED picks
 * another reproducible sample; KILN_HOSTILE_LOG names a file that gets a progress line every 500 requests.
 */
import { appendFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TEST_MODEL } from "../helpers/server.js";
import { spawnServe, type ServeProcess } from "../helpers/spawn-serve.js";
import { generateHostileRequests, type HostileRequest } from "./hostile-requests.js";
import { runHostile, type HostileFailure, type HostileReport } from "./hostile-run.js";

const KEY = "sk-hostile";
const COUNT = Number(process.env.KILN_HOSTILE_COUNT ?? 300);
const SEED = Number(process.env.KILN_HOSTILE_SEED ?? 1);
/** RSS may grow this much between the end of the warm-up and the end of the run. */
const RSS_GROWTH_LIMIT = 96 * 1024 * 1024;


let serve: ServeProcess;
let report: HostileReport;

beforeAll(async () => {
  serve = await spawnServe(["--api-key", KEY, "--max-output-tokens", "1", "--ctx-size", "2048", "--parallel", "2", "--log-level", "silent"]);
}, 120_000);

afterAll(async () => {
  serve?.child.kill("SIGTERM");
  await serve?.exited;
});

/** The area a failure belongs to, from what was done to its request. */
function areaOf(request: HostileRequest): string {
  if (request.kind === "deep-nesting") return "deep-nesting";
  if (request.kind === "large-input") return "large-input";
  if (request.kind === "special-tokens") return "special-tokens";
  if (/^(logprobs|top_logprobs|n|seed|logit_bias|stream_options)(\.|:)/.test(request.detail)) return "sampling-fields";
  return "other";
}

function describeFailure(failure: HostileFailure): string {
  const { request } = failure;
  const body = request.body && request.body.length > 200 ? `${request.body.slice(0, 200)}… (${request.body.length} bytes)` : request.body;
  return `[${areaOf(request)}] #${request.id} ${failure.problem} ${failure.status ?? ""} ${request.method} ${request.path.slice(0, 80)} ` +
    `(${request.base}, ${request.kind}: ${request.detail.slice(0, 120)}) → ${failure.message.slice(0, 240)}\n    body: ${body ?? ""}`;
}

describe("hostile input against kiln serve", () => {
  it(`answers ${COUNT} generated malformed and mutated requests without a crash, a 5xx or a stall`, async () => {
    const requests = generateHostileRequests(COUNT, SEED, TEST_MODEL, KEY);
    const progress = (sofar: HostileReport) => {
      if (sofar.sent % 500 < 16 && process.env.KILN_HOSTILE_LOG) {
        appendFileSync(process.env.KILN_HOSTILE_LOG, `${new Date().toISOString()} ${sofar.sent}/${COUNT} sent, ${sofar.failures.length} failures\n`);
      }
    };
    report = await runHostile(requests, { url: serve.url, key: KEY, onBatch: progress });
    const grouped = new Map<string, HostileFailure[]>();
    for (const failure of report.failures) grouped.set(areaOf(failure.request), [...(grouped.get(areaOf(failure.request)) ?? []), failure]);
    const lines = [
      `hostile run: ${report.sent} requests in ${report.seconds.toFixed(1)} s (seed ${SEED}), statuses ${JSON.stringify(report.statuses)}, ` +
        `${report.staleRetries} sent again after an idle kept-alive connection closed, ${report.replayed} replayed to find event-loop stalls`,
      `event loop max ${report.maxLoopDelayMs.toFixed(0)} ms; RSS ${mib(report.rssBeforeBytes)} → ${mib(report.rssAfterBytes)} MiB`,
      ...[...grouped].map(([area, failures]) => `${area}: ${failures.length} failures\n  ${failures.slice(0, 25).map(describeFailure).join("\n  ")}`),
    ];
    console.log(lines.join("\n"));

    expect(serve.child.exitCode, "the server process exited").toBeNull();
    expect((await fetch(`${serve.url}/health`)).status).toBe(200);
    expect(report.failures.map(describeFailure)).toEqual([]);
    expect(report.sent).toBe(COUNT);
    expect(report.rssAfterBytes - report.rssBeforeBytes, "RSS growth over the run").toBeLessThan(RSS_GROWTH_LIMIT);
  }, 4 * 3600_000);
});

function mib(bytes: number): string {
  return (bytes / 1024 / 1024).toFixed(0);
}
