/**
 * HTTP-level decisions, with a static key: dot segments are refused, bodies declared as non-JSON get 415 (no
 * content type is read as JSON), oversized headers get 431 with a body in the caller's shape (never a reset), and
 * /metrics needs a key while /health does not. None of it depends on a model's output, so the model is scripted
 * (it answers count_tokens with its recording's count). What needs the socket (a raw request target, Node's header
 * limit and HTTP parser) runs on a real loopback port only; the rest also in-process. Schemas kiln cannot turn into
 * a grammar are refused by the local backends' grammar builder: those tests are with the real model, in
 * test/anthropic/messages.test.ts and test/openai/chat.test.ts.
 */
import Anthropic from "@anthropic-ai/sdk";
import { request as httpRequest } from "node:http";
import { connect } from "node:net";
import { describe, expect, it } from "vitest";
import { startScriptedEngine } from "../helpers/scripted-engine.js";
import { describeMatrix, type MatrixTarget } from "../helpers/server-matrix.js";
import { TEST_MODEL } from "../helpers/server.js";

const KEY = "sk-http-edges";
const count = { model: TEST_MODEL, messages: [{ role: "user", content: "Hi" }] };
const chat = { model: TEST_MODEL, max_tokens: 1, messages: [{ role: "user", content: "Hi" }] };
const setup = { engine: () => startScriptedEngine({ contextSize: 1024 }), options: { apiKeys: [KEY], features: { metricsText: async () => "kiln_up 1\n" } } };

/** A request sent with its target exactly as given (fetch would resolve dot segments first). */
function rawRequest(server: MatrixTarget, method: string, path: string, headers: Record<string, string>, body?: string): Promise<{ status: number; body: string }> {
  const { port } = new URL(server.url);
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: "127.0.0.1", port, method, path, headers }, (res) => {
      let text = "";
      res.setEncoding("utf8").on("data", (chunk: string) => (text += chunk)).on("end", () => resolve({ status: res.statusCode ?? 0, body: text }));
    });
    req.on("error", reject);
    req.end(body);
  });
}

function expectAnthropicError(body: unknown, type: string): void {
  expect(body).toMatchObject({ type: "error", error: { type, message: expect.any(String) } });
}

function expectOpenAIError(body: unknown, code: string | null): void {
  expect(body).toMatchObject({ error: { message: expect.any(String), type: "invalid_request_error", code } });
  expect(Object.keys((body as { error: object }).error).sort()).toEqual(["code", "message", "param", "type"]);
}

describeMatrix("HTTP edges", setup, (server) => {
  describe("content types", () => {
    const post = (path: string, body: string, headers: Record<string, string>) =>
      server.fetch(`${server.url}${path}`, { method: "POST", headers: { "x-api-key": KEY, ...headers }, body });

    it("answers 415 in the surface's shape for bodies declared as text or form data", async () => {
      const text = await post("/v1/messages/count_tokens", JSON.stringify(count), { "content-type": "text/plain;charset=UTF-8" });
      expect(text.status).toBe(415);
      expectAnthropicError(await text.json(), "invalid_request_error");
      const form = await server.fetch(`${server.url}/v1/chat/completions`, { method: "POST", headers: { authorization: `Bearer ${KEY}`, "content-type": "application/x-www-form-urlencoded" }, body: JSON.stringify(chat) });
      expect(form.status).toBe(415);
      const body = await form.json();
      expectOpenAIError(body, "unsupported_media_type");
      expect(body.error.param).toBe("content-type");
      const multipart = new FormData();
      multipart.set("model", TEST_MODEL);
      expect((await server.fetch(`${server.url}/v1/completions`, { method: "POST", headers: { authorization: `Bearer ${KEY}` }, body: multipart })).status).toBe(415);
    });

    it("reads JSON types with parameters, +json types and bodies without a content type", async () => {
      const bare = new Blob([JSON.stringify(count)]);
      expect(bare.type).toBe("");
      const untyped = await post("/v1/messages/count_tokens", bare as unknown as string, {});
      expect(untyped.status).toBe(200);
      expect((await untyped.json()).input_tokens).toBeGreaterThan(0);
      expect((await post("/v1/messages/count_tokens", JSON.stringify(count), { "content-type": "Application/JSON; charset=utf-8" })).status).toBe(200);
      expect((await post("/v1/messages/count_tokens", JSON.stringify(count), { "content-type": "application/vnd.api+json" })).status).toBe(200);
      const sdk = new Anthropic({ apiKey: KEY, baseURL: server.url, maxRetries: 0, fetch: server.fetch });
      expect((await sdk.messages.countTokens({ model: TEST_MODEL, messages: [{ role: "user", content: "Hi" }] })).input_tokens).toBeGreaterThan(0);
    });
  });

  describe("open endpoints", () => {
    it("serves /health without a key and /metrics only with one", async () => {
      expect((await server.fetch(`${server.url}/health`)).status).toBe(200);
      const anonymous = await server.fetch(`${server.url}/metrics`);
      expect(anonymous.status).toBe(401);
      expectOpenAIError(await anonymous.json(), "invalid_api_key");
      const keyed = await server.fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer ${KEY}` } });
      expect(keyed.status).toBe(200);
      expect(await keyed.text()).toBe("kiln_up 1\n");
    });
  });
});

// A raw request target, Node's header size limit and its HTTP parser exist only on a socket.
describeMatrix("HTTP edges on a socket", setup, (server) => {
  describe("dot segments", () => {
    it("refuses . and .. segments, plain or percent-encoded, instead of serving the route they resolve to", async () => {
      const json = { "content-type": "application/json", authorization: `Bearer ${KEY}` };
      const chatAnswer = await rawRequest(server, "POST", "/v1/messages/../chat/completions", json, JSON.stringify(chat));
      expect(chatAnswer.status).toBe(400);
      expectOpenAIError(JSON.parse(chatAnswer.body), null);
      expect(JSON.parse(chatAnswer.body).error).toMatchObject({ param: "path", message: expect.stringMatching(/dot segments/) });
      const encoded = await rawRequest(server, "POST", "/v1/chat/completions/%2e%2e/%2E%2E/messages/count_tokens", { ...json, "x-api-key": KEY }, JSON.stringify(count));
      expect(encoded.status).toBe(400);
      expectAnthropicError(JSON.parse(encoded.body), "invalid_request_error");
      expect((await rawRequest(server, "GET", "/v1/./models", json)).status).toBe(400);
      expect((await rawRequest(server, "GET", "/v1/models", json)).status).toBe(200);
    });
  });

  describe("oversized headers", () => {
    it("answers 431 with a body in the caller's shape, for a header just over the limit and one far over it", async () => {
      for (const size of [20_000, 200_000]) {
        const anthropic = await server.fetch(`${server.url}/v1/messages`, { method: "POST", headers: { "content-type": "application/json", "x-api-key": "k".repeat(size) }, body: JSON.stringify(chat) });
        expect(anthropic.status).toBe(431);
        expectAnthropicError(await anthropic.json(), "invalid_request_error");
        const openai = await server.fetch(`${server.url}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${"k".repeat(size)}` }, body: JSON.stringify(chat) });
        expect(openai.status).toBe(431);
        expectOpenAIError(await openai.json(), "request_header_fields_too_large");
      }
      expect((await server.fetch(`${server.url}/health`)).status).toBe(200);
    });

    it("answers a request the HTTP parser rejects with a 400 body in the caller's shape", async () => {
      const { port } = new URL(server.url);
      const reply = await new Promise<string>((resolve, reject) => {
        const socket = connect(Number(port), "127.0.0.1", () => socket.write("P@ST /v1/messages HTTP/1.1\r\nx-api-key: k\r\n\r\n"));
        let text = "";
        socket.setEncoding("utf8").on("data", (chunk: string) => (text += chunk)).on("end", () => resolve(text)).on("error", reject);
      });
      const [head = "", body = ""] = reply.split("\r\n\r\n");
      expect(head).toMatch(/^HTTP\/1\.1 400 /);
      expect(head).toMatch(/\r\ncontent-type: application\/json\r\n/);
      expectAnthropicError(JSON.parse(body), "invalid_request_error");
    });
  });
}, ["loopback"]);
