/**
 * A front kiln with a remote model whose replicas are two real `kiln serve` upstreams running the real default
 * model: both surfaces, streaming, a forced tool call and ignore_eos work through the front; load spreads; a stopped replica
 * is routed around, marked down and later back up; a disconnecting client frees the upstream's sequence.
 */
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createEngine, type Engine } from "../../src/engine/index.js";
import { createServer, type ListeningServer } from "../../src/server/app.js";
import { startTestServer, TEST_MODEL, type TestServer } from "../helpers/server.js";

const FRONT_MODEL = "team-model";
let upstreams: TestServer[] = [];
let frontEngine: Engine;
let front: ListeningServer;

interface ReplicaState { url: string; healthy: boolean; served: number; outstanding: number }
const replicaStates = () => frontEngine.findModel(FRONT_MODEL)!.details!.replicas as ReplicaState[];

async function waitFor(condition: () => boolean | Promise<boolean>, what: string, deadlineMs = 20_000): Promise<void> {
  const end = Date.now() + deadlineMs;
  while (!(await condition())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setImmediate(resolve));
  }
}

beforeAll(async () => {
  upstreams = [await startTestServer({ parallel: 1 }), await startTestServer({ parallel: 1 })];
  frontEngine = await createEngine({
    models: [],
    remoteModels: [{ id: FRONT_MODEL, upstreamModel: TEST_MODEL, replicas: upstreams.map((u) => ({ url: `${u.url}/v1` })), maxConcurrency: 1, healthIntervalMs: 200 }],
  });
  front = await createServer(frontEngine).listen({ host: "127.0.0.1", port: 0 });
});

afterAll(async () => {
  await front?.close();
  await frontEngine?.close();
  await Promise.all(upstreams.map((u) => u.close()));
});

describe("kiln in front of kiln replicas", () => {
  it("serves the Anthropic surface, streaming and not, with real usage from the upstream", async () => {
    const client = new Anthropic({ baseURL: front.url, apiKey: "unused", maxRetries: 0 });
    const message = await client.messages.create({ model: FRONT_MODEL, max_tokens: 12, messages: [{ role: "user", content: "Say hello." }] });
    expect(message.content[0]).toMatchObject({ type: "text" });
    expect(message.usage.input_tokens + (message.usage.cache_read_input_tokens ?? 0)).toBeGreaterThan(5);
    expect(message.usage.output_tokens).toBeGreaterThan(0);
    const streamed = await client.messages.stream({ model: FRONT_MODEL, max_tokens: 8, messages: [{ role: "user", content: "Count to three." }] }).finalMessage();
    // The model may finish its count within 8 tokens: either stop is right, and the usage must agree with it.
    expect(["max_tokens", "end_turn"]).toContain(streamed.stop_reason);
    if (streamed.stop_reason === "max_tokens") expect(streamed.usage.output_tokens).toBe(8);
    else expect(streamed.usage.output_tokens).toBeLessThanOrEqual(8);
    expect(streamed.usage.output_tokens).toBeGreaterThan(0);
  });

  it("forwards a forced tool call through the OpenAI surface and its arguments parse", async () => {
    const client = new OpenAI({ baseURL: `${front.url}/v1`, apiKey: "unused", maxRetries: 0 });
    const completion = await client.chat.completions.create({
      model: FRONT_MODEL,
      max_tokens: 48,
      messages: [{ role: "user", content: "What is the weather in Paris?" }],
      tools: [{ type: "function", function: { name: "get_weather", parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } } }],
      tool_choice: { type: "function", function: { name: "get_weather" } },
    });
    const call = completion.choices[0].message.tool_calls?.[0];
    expect(completion.choices[0].finish_reason).toBe("tool_calls");
    expect(call?.type === "function" && call.function.name).toBe("get_weather");
    expect(typeof JSON.parse(call!.type === "function" ? call!.function.arguments : "{}").city).toBe("string");
  });

  it("passes ignore_eos to the upstream: an answer that ends early goes on to max_tokens", async () => {
    const client = new OpenAI({ baseURL: `${front.url}/v1`, apiKey: "unused", maxRetries: 0 });
    const ask = { model: FRONT_MODEL, messages: [{ role: "user" as const, content: "What is 2+2? Answer with a number." }], max_tokens: 32, temperature: 0 };
    const ended = await client.chat.completions.create(ask);
    expect(ended.choices[0]!.finish_reason).toBe("stop");
    expect(ended.usage!.completion_tokens).toBeLessThan(32);
    const past = await client.chat.completions.create({ ...ask, ignore_eos: true } as typeof ask);
    expect(past.choices[0]!.finish_reason).toBe("length");
    expect(past.usage!.completion_tokens).toBe(32);
  });

  it("spreads load over the replicas", async () => {
    const before = replicaStates().map((r) => r.served);
    const client = new OpenAI({ baseURL: `${front.url}/v1`, apiKey: "unused", maxRetries: 0 });
    await Promise.all([1, 2, 3, 4].map(() => client.chat.completions.create({ model: FRONT_MODEL, max_tokens: 4, messages: [{ role: "user", content: "Hi" }] })));
    const after = replicaStates().map((r) => r.served);
    expect(after[0] - before[0]).toBeGreaterThan(0);
    expect(after[1] - before[1]).toBeGreaterThan(0);
  });

  it("routes around a stopped replica, marks it down, and back up when it returns", async () => {
    const stopped = upstreams[0];
    const port = stopped.server.port;
    await stopped.server.close();
    const client = new OpenAI({ baseURL: `${front.url}/v1`, apiKey: "unused", maxRetries: 0 });
    for (let i = 0; i < 3; i++) {
      const completion = await client.chat.completions.create({ model: FRONT_MODEL, max_tokens: 4, messages: [{ role: "user", content: "Hi" }] });
      expect(completion.choices[0].finish_reason).toBeTruthy();
    }
    await waitFor(() => replicaStates()[0].healthy === false, "the stopped replica to be marked down");
    stopped.server = await createServer(stopped.engine).listen({ host: "127.0.0.1", port });
    await waitFor(() => replicaStates()[0].healthy === true, "the replica to be marked up again");
  });

  it("frees the upstream sequence when the client disconnects", async () => {
    const controller = new AbortController();
    const response = await fetch(`${front.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: FRONT_MODEL, max_tokens: 400, stream: true, messages: [{ role: "user", content: "Write a long story about a kiln." }] }),
      signal: controller.signal,
    });
    const reader = response.body!.getReader();
    await reader.read();
    await waitFor(() => upstreams.some((u) => u.engine.stats().activeSequences === 1), "an upstream to be generating");
    controller.abort();
    await waitFor(() => upstreams.every((u) => u.engine.stats().activeSequences === 0), "the upstream sequence to be freed");
    await waitFor(() => replicaStates().every((r) => r.outstanding === 0), "the front to release the replica");
  });
});
