/**
 * The request log names why a request failed, so a failing client (a coding agent, say) can be diagnosed from the
 * server's log alone. A real loopback server whose engine never finishes loading: no model is needed for failures.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import type { Engine } from "../../src/engine/index.js";
import { createServer, type ListeningServer } from "../../src/server/app.js";
import type { ResponseRecord } from "../../src/server/context.js";
import { createRequestLogger } from "../../src/team/request-logger.js";

let server: ListeningServer;
const records: ResponseRecord[] = [];

beforeAll(async () => {
  server = await createServer(new Promise<Engine>(() => {}), { apiKeys: ["k"], onResponse: (r) => records.push({ ...r }) }).listen({ host: "127.0.0.1", port: 0 });
});

afterAll(async () => {
  await server?.close();
});

it("records the error code and message of a refused request, and the log line carries it", async () => {
  await fetch(`${server.url}/v1/messages`, { method: "POST", body: "{}" });
  await fetch(`${server.url}/v1/chat/completions`, { method: "POST", headers: { authorization: "Bearer k" }, body: "{}" });
  await fetch(`${server.url}/health`);
  const [unauthorized, loading, health] = records;
  expect(unauthorized).toMatchObject({ status: 401, error: expect.stringMatching(/^authentication: missing API key/) });
  expect(loading).toMatchObject({ status: 503, error: expect.stringMatching(/^overloaded: .*loading/) });
  expect(health?.error).toBeUndefined();
  const lines: string[] = [];
  createRequestLogger({ pretty: false, write: (line) => lines.push(line) })(unauthorized!);
  expect(JSON.parse(lines[0]!).error).toBe(unauthorized!.error);
});
