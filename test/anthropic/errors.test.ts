/**
 * Error statuses and transport rules, with the classic SDK 0.x (which sends `x-api-key`) and raw HTTP, against a
 * real server with the real default model: one slot and no queue, so a second concurrent request is refused with
 * 529. After every error the server keeps serving.
 */
import Anthropic from "anthropic-sdk-0";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, TEST_MODEL, type TestServer } from "../helpers/server.js";
import { checkAnthropicStream } from "../helpers/sse.js";

const KEY = "sk-errors-test";
const SLOW = { timeout: 600_000 };
const hello = { model: TEST_MODEL, max_tokens: 2, messages: [{ role: "user" as const, content: "Hi" }] };

let server: TestServer;
let client: Anthropic;

beforeAll(async () => {
  server = await startTestServer({ apiKeys: [KEY], parallel: 1, queue: 0, ctxSize: 1024 });
  client = new Anthropic({ apiKey: KEY, baseURL: server.url, maxRetries: 0 });
});

afterAll(async () => {
  await server?.close();
});

async function post(path: string, body: string, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${server.url}${path}`, { method: "POST", headers: { "content-type": "application/json", "x-api-key": KEY, ...headers }, body });
}

async function expectError(response: Response, status: number, type: string, message?: RegExp): Promise<void> {
  expect(response.status).toBe(status);
  expect(response.headers.get("content-type")).toBe("application/json");
  const requestId = response.headers.get("request-id");
  expect(requestId).toMatch(/^req_/);
  const body = await response.json();
  expect(body).toMatchObject({ type: "error", error: { type }, request_id: requestId });
  if (message) expect(body.error.message).toMatch(message);
  if (status >= 400 && status < 500) expect(response.headers.get("x-should-retry")).toBe("false");
}

describe("validation (400)", () => {
  it("names the field path and the rule", async () => {
    const missing = await client.messages.create({ model: TEST_MODEL, messages: hello.messages } as never).catch((e) => e);
    expect(missing).toBeInstanceOf(Anthropic.BadRequestError);
    expect(missing.error.error.message).toBe("max_tokens: Field required");
    await expectError(await post("/v1/messages", JSON.stringify({ ...hello, temperature: 2 })), 400, "invalid_request_error", /^temperature: /);
    await expectError(await post("/v1/messages", JSON.stringify({ ...hello, messages: [{ role: "user", content: [{ type: "text", text: 5 }] }] })), 400, "invalid_request_error", /^messages\.0\.content\.0\.text: /);
    await expectError(await post("/v1/messages", JSON.stringify({ max_tokens: 1, messages: hello.messages })), 400, "invalid_request_error", /^model: Field required$/);
    await expectError(await post("/v1/messages", JSON.stringify({ ...hello, tool_choice: { type: "tool", name: "nope" }, tools: [] })), 400, "invalid_request_error", /^tool_choice/);
  });

  it("rejects malformed JSON and a bad anthropic-version, accepts any beta", async () => {
    await expectError(await post("/v1/messages", "{not json"), 400, "invalid_request_error", /invalid JSON/);
    await expectError(await post("/v1/messages", JSON.stringify(hello), { "anthropic-version": "latest" }), 400, "invalid_request_error", /anthropic-version/);
    const counted = await post("/v1/messages/count_tokens?beta=true", JSON.stringify(hello), { "anthropic-version": "2023-06-01", "anthropic-beta": "made-up-2099-01-01,token-counting-2024-11-01" });
    expect(counted.status).toBe(200);
    expect((await counted.json()).input_tokens).toBeGreaterThan(0);
  });

  it("rejects images for a text-only model and reports context overflow in Claude Code's words", async () => {
    const image = { type: "image", source: { type: "base64", media_type: "image/png", data: "iVBORw0KGgo=" } };
    await expectError(await post("/v1/messages", JSON.stringify({ ...hello, messages: [{ role: "user", content: [image] }] })), 400, "invalid_request_error", /image/);
    const long = "word ".repeat(3000);
    await expectError(await post("/v1/messages", JSON.stringify({ ...hello, messages: [{ role: "user", content: long }] })), 400, "invalid_request_error", /^prompt is too long: \d+ tokens > 1024 maximum$/);
  });
});

describe("auth, routing and limits", () => {
  it("401 without or with a wrong key; both headers and Bearer authenticate", async () => {
    const wrong = new Anthropic({ apiKey: "wrong", baseURL: server.url, maxRetries: 0 });
    expect(await wrong.models.list().catch((e) => e)).toBeInstanceOf(Anthropic.AuthenticationError);
    const none = await fetch(`${server.url}/v1/models`, { headers: { "anthropic-version": "2023-06-01" } });
    await expectError(none, 401, "authentication_error");
    const both = await fetch(`${server.url}/v1/models`, { headers: { "x-api-key": KEY, authorization: `Bearer ${KEY}` } });
    expect(both.status).toBe(200);
    const bearer = await fetch(`${server.url}/v1/models`, { headers: { authorization: `Bearer ${KEY}` } });
    expect(bearer.status).toBe(200);
  });

  it("404 for an unknown model (naming it) and an unknown route, in Anthropic's shape", async () => {
    const unknown = await client.messages.create({ ...hello, model: "no-such-model" }).catch((e) => e);
    expect(unknown).toBeInstanceOf(Anthropic.NotFoundError);
    expect(unknown.error.error.message).toContain("no-such-model");
    expect(await client.models.retrieve("no-such-model").catch((e) => e)).toBeInstanceOf(Anthropic.NotFoundError);
    await expectError(await post("/v1/nothing-here", "{}"), 404, "not_found_error");
  });

  it("413 above 32 MB; a body just under it is accepted (unknown fields ignored)", { timeout: 300_000 }, async () => {
    const big = JSON.stringify({ ...hello, padding: "x".repeat(32 * 1024 * 1024 - 200) });
    const accepted = await post("/v1/messages/count_tokens", big);
    expect(accepted.status).toBe(200);
    const tooBig = JSON.stringify({ ...hello, padding: "x".repeat(33 * 1024 * 1024) });
    await expectError(await post("/v1/messages", tooBig), 413, "request_too_large");
  });

  it("answers HEAD preconnects, health, CORS preflight, prefixes and doubled slashes", async () => {
    for (const path of ["/", "/api/hello"]) expect((await fetch(`${server.url}${path}`, { method: "HEAD" })).status).toBe(200);
    expect((await fetch(`${server.url}/health`)).status).toBe(200);
    const preflight = await fetch(`${server.url}/v1/messages`, { method: "OPTIONS", headers: { origin: "http://x", "access-control-request-method": "POST" } });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get("access-control-allow-origin")).toBe("*");
    const prefixed = await post("/prefix/v1//messages/count_tokens", JSON.stringify(hello));
    expect(prefixed.status).toBe(200);
    const ids = await Promise.all([1, 2, 3].map(async () => (await fetch(`${server.url}/health`)).headers.get("request-id")));
    expect(new Set(ids).size).toBe(3);
  });
});

describe("overload (529) and recovery", SLOW, () => {
  it("refuses a second concurrent request with 529 and retry-after while the only slot is busy, then serves again", async () => {
    const longPrompt = "Tell me everything about the history of pottery. ".repeat(60);
    const busy = await post("/v1/messages", JSON.stringify({ ...hello, max_tokens: 48, stream: true, messages: [{ role: "user", content: longPrompt }] }));
    expect(busy.status).toBe(200);
    const refused = await post("/v1/messages", JSON.stringify(hello));
    await expectError(refused, 529, "overloaded_error");
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(checkAnthropicStream(await busy.text())).toEqual([]);
    const after = await client.messages.create(hello);
    expect(after.type).toBe("message");
  });

  it("a client that disconnects mid-stream frees the slot for the next request", async () => {
    const controller = new AbortController();
    const stream = await fetch(`${server.url}/v1/messages`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-api-key": KEY },
      body: JSON.stringify({ ...hello, max_tokens: 48, stream: true }),
      signal: controller.signal,
    });
    const reader = stream.body!.getReader();
    await reader.read();
    controller.abort();
    // The slot is released within a decode step of the disconnect; retries (honouring retry-after) cover that gap,
    // far shorter than the 48 tokens the abandoned generation would otherwise take.
    const next = await client.messages.create(hello, { maxRetries: 3 });
    expect(next.type).toBe("message");
  });
});
