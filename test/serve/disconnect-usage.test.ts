/**
 * What a client that disconnects mid-stream generated still counts: the request's record (which the request log,
 * metrics, usage ledger and token rate limits read) carries the output tokens produced before the generation
 * stopped. Otherwise a client could generate without limit by hanging up before the end. Real model, real loopback
 * server, both surfaces. Its record says the client left (499 aborted), not that the response was served (200).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ResponseRecord } from "../../src/server/context.js";
import { startTestServer, TEST_MODEL, type TestServer } from "../helpers/server.js";

let server: TestServer;
const finished: Array<(record: ResponseRecord) => void> = [];

beforeAll(async () => {
  server = await startTestServer({ parallel: 1, onResponse: (record) => finished.shift()?.({ ...record }) });
});

afterAll(async () => {
  await server?.close();
});

/** Sends a streaming request, reads `chunks` body chunks, hangs up, and resolves with the request's record. */
async function hangUpAfter(path: string, body: object, chunks: number): Promise<ResponseRecord> {
  const record = new Promise<ResponseRecord>((resolve) => finished.push(resolve));
  const controller = new AbortController();
  const response = await fetch(`${server.url}${path}`, {
    method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body), signal: controller.signal,
  });
  const reader = response.body!.getReader();
  for (let i = 0; i < chunks; i++) await reader.read();
  controller.abort();
  return record;
}

describe("a client that disconnects mid-stream", () => {
  it.each([
    ["/v1/chat/completions", { model: TEST_MODEL, messages: [{ role: "user", content: "Count from 1 to 100." }], max_tokens: 400, temperature: 0, stream: true }],
    ["/v1/messages", { model: TEST_MODEL, messages: [{ role: "user", content: "Count from 1 to 100." }], max_tokens: 400, temperature: 0, stream: true }],
  ])("%s: is charged for the tokens generated before it left, and logged as 499 aborted", async (path, body) => {
    const record = await hangUpAfter(path, body, 12);
    expect(record.status).toBe(499);
    expect(record.error).toMatch(/^aborted: /);
    expect(record.inputTokens).toBeGreaterThan(0);
    expect(record.outputTokens).toBeGreaterThanOrEqual(3);
    expect(record.outputTokens).toBeLessThan(400);
  });
});
