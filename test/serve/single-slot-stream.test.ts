/**
 * A one-slot server on two threads, whose short steps run on the event loop's thread, streams as it generates. There
 * node-llama-cpp dispatches each step in the microtask that queued its token (every sequence of the context has one),
 * and before the loop was given a turn between such steps a whole generation ran as one chain of microtasks: no
 * token reached the socket before the last, and a client that hung up was noticed only at the end. Real model, real
 * loopback server: a client hangs up after its first tokens of a generation that would run to 1,000.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import type { ResponseRecord } from "../../src/server/context.js";
import { startTestServer, TEST_MODEL, type TestServer } from "../helpers/server.js";
import { readSse } from "../../src/lib/read-sse.js";

let server: TestServer;
const finished: Array<(record: ResponseRecord) => void> = [];

beforeAll(async () => {
  server = await startTestServer({ parallel: 1, threads: 2, onResponse: (record) => finished.shift()?.({ ...record }) });
});

afterAll(async () => {
  await server?.close();
});

it("sends each token as it is generated: a client that leaves after three stops the generation", async () => {
  const record = new Promise<ResponseRecord>((resolve) => finished.push(resolve));
  const controller = new AbortController();
  const response = await fetch(`${server.url}/v1/chat/completions`, {
    method: "POST", headers: { "content-type": "application/json" }, signal: controller.signal,
    body: JSON.stringify({ model: TEST_MODEL, messages: [{ role: "user", content: "Count from 1 to 1000." }], max_tokens: 1000, ignore_eos: true, temperature: 0, stream: true }),
  });
  let tokens = 0;
  for await (const event of readSse(response.body!)) {
    if (event.data !== "[DONE]" && JSON.parse(event.data).choices?.[0]?.delta?.content) tokens++;
    if (tokens === 3) break;
  }
  controller.abort();
  const { status, outputTokens } = await record;
  expect(status).toBe(499);
  expect(outputTokens).toBeGreaterThanOrEqual(3);
  expect(outputTokens).toBeLessThan(1000);
});
