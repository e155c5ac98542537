/**
 * Team features on a real server with the real default model, driven by the official SDKs: usage rows, metrics
 * (decode steps included) and logs that match real generations, stored keys made by the real CLI while the server
 * runs. Key enforcement (revocation, scopes, request limits) needs no model's output: it is in
 * key-enforcement.test.ts, on the scripted model.
 */
import Anthropic from "@anthropic-ai/sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTeamFeatures, type TeamFeatures } from "../../src/team/team-features.js";
import { TeamDb } from "../../src/team/team-db.js";
import { queryUsage } from "../../src/team/usage-ledger.js";
import { createServer } from "../../src/server/app.js";
import { startTestServer, TEST_MODEL, type TestServer } from "../helpers/server.js";
import { createStoredKey, makeHome } from "../helpers/team-cli.js";

let home: string;
let features: TeamFeatures;
let server: TestServer;
const logLines: string[] = [];
const issuedKeys: string[] = [];

beforeAll(async () => {
  home = makeHome();
  features = createTeamFeatures({ home, logWrite: (line) => logLines.push(line), prettyLogs: false });
  server = await startTestServer({ features, parallel: 1, ctxSize: 1024 });
});

let closed = false;

/** Stops the server and then the features, in the order `kiln serve` does on SIGTERM. */
async function shutDown(): Promise<void> {
  if (closed) return;
  closed = true;
  await server?.close();
  await features?.close();
}

afterAll(shutDown);

/** Creates a stored key through the real CLI while the server runs. */
async function createKey(...args: string[]): Promise<string> {
  const key = await createStoredKey(home, args);
  issuedKeys.push(key);
  return key;
}

function anthropic(key: string): Anthropic {
  return new Anthropic({ apiKey: key, baseURL: server.url, maxRetries: 0 });
}

const ask = (key: string) =>
  anthropic(key).messages.create({ model: TEST_MODEL, max_tokens: 8, messages: [{ role: "user", content: "Say hi" }] });

/** GET /metrics over HTTP: it needs a key, like the API (/health does not). */
async function scrapeMetrics(key: string): Promise<string> {
  expect((await fetch(`${server.url}/metrics`)).status).toBe(401);
  expect((await fetch(`${server.url}/health`)).status).toBe(200);
  const response = await fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer ${key}` } });
  expect(response.status).toBe(200);
  expect(response.headers.get("content-type")).toMatch(/^text\/plain/);
  return response.text();
}

/** Prometheus text → sum of the samples of `name` whose labels include `labels`. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number {
  let total = 0;
  for (const line of text.split("\n")) {
    const match = /^(\w+)(?:\{(.*)\})? ([\d.e+-]+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const found = Object.fromEntries([...(match[2] ?? "").matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
    if (Object.entries(labels).every(([key, value]) => found[key] === value)) total += Number(match[3]);
  }
  return total;
}

describe("usage, metrics and logs", () => {
  it("records usage rows and metrics that match the requests made, and logs them without the key", async () => {
    const key = await createKey("--name", "metered");
    const before = await scrapeMetrics(key);
    expect((await fetch(`${server.url}/no/such/path-${Date.now()}`)).status).toBe(404);
    const totals = { input: 0, cached: 0, output: 0 };
    let streamsWithText = 0;
    let gaps = 0;
    const requestIds: string[] = [];
    for (const content of ["Count to three", "Name a colour"]) {
      const stream = anthropic(key).messages.stream({ model: TEST_MODEL, max_tokens: 12, messages: [{ role: "user", content }] });
      let deltas = 0;
      stream.on("text", () => void (deltas += 1));
      const message = await stream.finalMessage();
      requestIds.push(String((await stream.withResponse()).response.headers.get("request-id")));
      if (deltas > 0) streamsWithText += 1;
      gaps += Math.max(0, deltas - 1);
      totals.input += message.usage.input_tokens + (message.usage.cache_read_input_tokens ?? 0);
      totals.cached += message.usage.cache_read_input_tokens ?? 0;
      totals.output += message.usage.output_tokens;
    }
    await features.flush();

    const db = TeamDb.open(home);
    try {
      expect(queryUsage(db, { key: "metered" })).toEqual([
        expect.objectContaining({ keyName: "metered", model: TEST_MODEL, requests: 2, inputTokens: totals.input, cachedInputTokens: totals.cached, outputTokens: totals.output }),
      ]);
    } finally {
      db.close();
    }

    const after = await scrapeMetrics(key);
    const delta = (name: string, labels?: Record<string, string>) => sample(after, name, labels) - sample(before, name, labels);
    expect(delta("kiln_requests_total", { route: "/v1/messages", status: "200", model: TEST_MODEL })).toBe(2);
    expect(delta("kiln_tokens_total", { model: TEST_MODEL, kind: "input" })).toBe(totals.input);
    expect(delta("kiln_tokens_total", { model: TEST_MODEL, kind: "output" })).toBe(totals.output);
    expect(delta("kiln_request_duration_seconds_count", { route: "/v1/messages" })).toBe(2);
    expect(delta("kiln_time_to_first_token_seconds_count", { model: TEST_MODEL })).toBe(streamsWithText);
    if (gaps > 0) expect(delta("kiln_inter_token_seconds_count", { model: TEST_MODEL })).toBeGreaterThan(0);
    // Unknown paths share one label value, so scanners cannot blow up the series count.
    expect(delta("kiln_requests_total", { route: "unmatched", status: "404" })).toBe(1);
    expect(after).not.toContain("/no/such/path");
    expect(after).toMatch(/^kiln_queue_depth 0$/m);
    expect(after).toMatch(/^kiln_active_sequences 0$/m);
    expect(after).toMatch(/^kiln_prompt_cache_hit_ratio [\d.e+-]+$/m);
    // Every generated token but each request's first came from a decode step of its own (the two ran one after the
    // other), and those steps' time is split into compute and host work.
    expect(delta("kiln_decode_steps_total", { model: TEST_MODEL })).toBeGreaterThanOrEqual(totals.output - 2);
    expect(delta("kiln_decode_step_tokens_total", { model: TEST_MODEL })).toBeGreaterThanOrEqual(totals.input - totals.cached + totals.output - 2);
    expect(delta("kiln_decode_step_seconds_total", { model: TEST_MODEL, part: "compute" })).toBeGreaterThan(0);
    expect(delta("kiln_decode_step_seconds_total", { model: TEST_MODEL, part: "host" })).toBeGreaterThan(0);

    const logged = logLines.map((line) => JSON.parse(line) as Record<string, unknown>);
    for (const requestId of requestIds) {
      expect(logged.find((entry) => entry.requestId === requestId)).toMatchObject({
        level: "info", msg: "request", method: "POST", route: "/v1/messages", status: 200, model: TEST_MODEL, stream: true,
        keyId: expect.stringMatching(/^key_/), durationMs: expect.any(Number), inputTokens: expect.any(Number), outputTokens: expect.any(Number),
      });
    }
    expect(logged.some((entry) => entry.status === 401 && entry.level === "warn")).toBe(true);
    for (const issued of issuedKeys) expect(logLines.join("\n")).not.toContain(issued);
    expect(logged.every((entry) => entry.prompt === undefined && entry.output === undefined)).toBe(true);
  });

  it("logs prompts and outputs only when asked to (--log-bodies)", async () => {
    const lines: string[] = [];
    const withBodies = createTeamFeatures({ home, logBodies: true, logWrite: (line) => lines.push(line), prettyLogs: false });
    const second = await createServer(server.engine, { features: withBodies }).listen({ host: "127.0.0.1", port: 0 });
    try {
      const key = await createKey("--name", "bodies");
      const client = new Anthropic({ apiKey: key, baseURL: second.url, maxRetries: 0 });
      const message = await client.messages.create({ model: TEST_MODEL, max_tokens: 8, messages: [{ role: "user", content: "Tell me about kilns" }] });
      const text = message.content.map((block) => (block.type === "text" ? block.text : "")).join("");
      const entry = JSON.parse(lines.at(-1)!) as { prompt?: unknown; output?: string; status: number };
      expect(entry.status).toBe(200);
      expect(JSON.stringify(entry.prompt)).toContain("Tell me about kilns");
      expect(entry.output).toBe(text);
      expect(lines.join("\n")).not.toContain(key);
    } finally {
      await second.close();
      await withBodies.close();
    }
  });

  it("writes pending usage when the server shuts down", async () => {
    const key = await createKey("--name", "last-call");
    const message = await ask(key);
    await shutDown();
    const db = TeamDb.open(home);
    try {
      expect(queryUsage(db, { key: "last-call" })).toEqual([
        expect.objectContaining({ requests: 1, outputTokens: message.usage.output_tokens }),
      ]);
    } finally {
      db.close();
    }
  });
});
