/**
 * Before the models are loaded: health says 503, API routes refuse with a retryable status in the caller's
 * shape, and the preconnect and CORS routes still answer. A real loopback server whose engine never finishes
 * loading (no model is needed to observe this state).
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import type { Engine } from "../../src/engine/index.js";
import { createServer, type ListeningServer } from "../../src/server/app.js";

let server: ListeningServer;

beforeAll(async () => {
  server = await createServer(new Promise<Engine>(() => {}), { apiKeys: ["k"] }).listen({ host: "127.0.0.1", port: 0 });
});

afterAll(async () => {
  await server?.close();
});

it("answers 503 on /health and /ready and a retryable error on API routes while loading", async () => {
  for (const path of ["/health", "/ready"]) {
    const response = await fetch(`${server.url}${path}`);
    expect(response.status).toBe(503);
    expect(await response.json()).toEqual({ status: "loading" });
  }
  const messages = await fetch(`${server.url}/v1/messages`, { method: "POST", headers: { "x-api-key": "k" }, body: "{}" });
  expect(messages.status).toBe(529);
  expect(messages.headers.get("retry-after")).toBe("2");
  expect((await messages.json()).error.type).toBe("overloaded_error");
  expect((await fetch(`${server.url}/api/hello`, { method: "HEAD" })).status).toBe(200);
});

it("authenticates before reporting the loading state", async () => {
  const response = await fetch(`${server.url}/v1/messages`, { method: "POST", body: "{}" });
  expect(response.status).toBe(401);
  expect(response.headers.get("request-id")).toMatch(/^req_/);
});
