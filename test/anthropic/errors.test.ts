/**
 * Error statuses and transport rules, with the classic SDK 0.x (which sends `x-api-key`) and raw HTTP, in-process
 * and on a real loopback port. The model is scripted (it replays a recorded reply): one slot and no queue, so a
 * second concurrent request is refused with 529 while a held generation keeps the slot. After every error the
 * server keeps serving. What needs the real model (images, context overflow) is in messages.test.ts.
 */
import Anthropic from "anthropic-sdk-0";
import { describe, expect, it } from "vitest";
import { createScriptGate } from "../../src/engine/backends/scripted/script-gate.js";
import { startScriptedEngine } from "../helpers/scripted-engine.js";
import { describeMatrix, type MatrixTarget } from "../helpers/server-matrix.js";
import { TEST_MODEL } from "../helpers/server.js";
import { checkAnthropicStream } from "../helpers/sse.js";

const KEY = "sk-errors-test";
const hello = { model: TEST_MODEL, max_tokens: 2, messages: [{ role: "user" as const, content: "Hi" }] };
const gate = createScriptGate();

describeMatrix("Anthropic errors", { engine: () => startScriptedEngine({ parallel: 1, queue: 0, contextSize: 1024, gate }), options: { apiKeys: [KEY] } }, (server) => {
  const client = () => new Anthropic({ apiKey: KEY, baseURL: server.url, maxRetries: 0, fetch: server.fetch });

  async function post(path: string, body: string, headers: Record<string, string> = {}): Promise<Response> {
    return server.fetch(`${server.url}${path}`, { method: "POST", headers: { "content-type": "application/json", "x-api-key": KEY, ...headers }, body });
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
      const missing = await client().messages.create({ model: TEST_MODEL, messages: hello.messages } as never).catch((e) => e);
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
  });

  describe("auth, routing and limits", () => {
    it("401 without or with a wrong key; both headers and Bearer authenticate", async () => {
      const wrong = new Anthropic({ apiKey: "wrong", baseURL: server.url, maxRetries: 0, fetch: server.fetch });
      expect(await wrong.models.list().catch((e) => e)).toBeInstanceOf(Anthropic.AuthenticationError);
      const none = await server.fetch(`${server.url}/v1/models`, { headers: { "anthropic-version": "2023-06-01" } });
      await expectError(none, 401, "authentication_error");
      const both = await server.fetch(`${server.url}/v1/models`, { headers: { "x-api-key": KEY, authorization: `Bearer ${KEY}` } });
      expect(both.status).toBe(200);
      const bearer = await server.fetch(`${server.url}/v1/models`, { headers: { authorization: `Bearer ${KEY}` } });
      expect(bearer.status).toBe(200);
    });

    it("404 for an unknown model (naming it) and an unknown route, in Anthropic's shape", async () => {
      const unknown = await client().messages.create({ ...hello, model: "no-such-model" }).catch((e) => e);
      expect(unknown).toBeInstanceOf(Anthropic.NotFoundError);
      expect(unknown.error.error.message).toContain("no-such-model");
      expect(await client().models.retrieve("no-such-model").catch((e) => e)).toBeInstanceOf(Anthropic.NotFoundError);
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
      for (const path of ["/", "/api/hello"]) expect((await server.fetch(`${server.url}${path}`, { method: "HEAD" })).status).toBe(200);
      expect((await server.fetch(`${server.url}/health`)).status).toBe(200);
      const preflight = await server.fetch(`${server.url}/v1/messages`, { method: "OPTIONS", headers: { origin: "http://x", "access-control-request-method": "POST" } });
      expect(preflight.status).toBe(204);
      expect(preflight.headers.get("access-control-allow-origin")).toBe("*");
      const prefixed = await post("/prefix/v1//messages/count_tokens", JSON.stringify(hello));
      expect(prefixed.status).toBe(200);
      const ids = await Promise.all([1, 2, 3].map(async () => (await server.fetch(`${server.url}/health`)).headers.get("request-id")));
      expect(new Set(ids).size).toBe(3);
    });
  });

  describe("overload (529) and recovery", () => {
    it("refuses a second concurrent request with 529 and retry-after while the only slot is busy, then serves again", async () => {
      gate.hold();
      const busy = await post("/v1/messages", JSON.stringify({ ...hello, stream: true }));
      expect(busy.status).toBe(200);
      const refused = await post("/v1/messages", JSON.stringify(hello));
      await expectError(refused, 529, "overloaded_error");
      expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
      gate.open();
      expect(checkAnthropicStream(await busy.text())).toEqual([]);
      const after = await client().messages.create(hello);
      expect(after.type).toBe("message");
    });

    it("a client that disconnects mid-stream frees the slot for the next request", async () => {
      gate.hold();
      const controller = new AbortController();
      const stream = await server.fetch(`${server.url}/v1/messages`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-api-key": KEY },
        body: JSON.stringify({ ...hello, stream: true }),
        signal: controller.signal,
      });
      const reader = stream.body!.getReader();
      await reader.read();
      controller.abort();
      // The held generation never finishes on its own: only the disconnect can free the slot. Retries (honouring
      // retry-after) cover the moment between the abort and the release.
      const next = await client().messages.create(hello, { maxRetries: 3 });
      expect(next.type).toBe("message");
      gate.open();
    });
  });
});
