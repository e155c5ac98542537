/**
 * The real default model served from the WebGPU backend, through both surfaces with the official SDKs: a short
 * non-streaming Anthropic message and a streamed OpenAI chat completion, each with real usage, and grammar-constrained
 * output (forced tool calls, JSON schema response format) valid against the request's schema, and two streams decoding
 * in shared steps when one of them is abandoned.
 */
import Anthropic from "@anthropic-ai/sdk";
import { Ajv } from "ajv";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { startTestServer, TEST_MODEL, type TestServer } from "../helpers/server.js";
import { webGpuAvailable } from "../helpers/webgpu.js";

const available = await webGpuAvailable();
const KEY = "webgpu-key";
let server: TestServer;

/** Bounded fields (an enum, a maxLength), so even a 135M model completes the JSON within max_tokens. */
const WEATHER_SCHEMA = {
  type: "object" as const,
  properties: { city: { type: "string", maxLength: 12 }, unit: { type: "string", enum: ["celsius", "fahrenheit"] } },
  required: ["city", "unit"],
  additionalProperties: false,
};
const weather = { name: "get_weather", description: "Current weather in a city", parameters: WEATHER_SCHEMA };

beforeAll(async () => {
  if (available) server = await startTestServer({ apiKeys: [KEY], backend: "webgpu", ctxSize: 512 });
});

afterAll(async () => {
  await server?.close();
});

describe.skipIf(!available)("kiln serve with the WebGPU backend", () => {
  it("lists the model as served by webgpu", async () => {
    const models = await new OpenAI({ apiKey: KEY, baseURL: `${server.url}/v1` }).models.list();
    expect(models.data.map((model) => model.id)).toContain(TEST_MODEL);
    expect(server.engine.findModel(TEST_MODEL)?.backend).toBe("webgpu");
  });

  it("answers POST /v1/messages with text and real usage", async () => {
    const client = new Anthropic({ apiKey: KEY, baseURL: server.url, maxRetries: 0 });
    const message = await client.messages.create({ model: TEST_MODEL, max_tokens: 6, messages: [{ role: "user", content: "What is the capital of France?" }] });
    expect(message.content[0]).toMatchObject({ type: "text" });
    expect(message.usage.input_tokens).toBe((await client.messages.countTokens({ model: TEST_MODEL, messages: [{ role: "user", content: "What is the capital of France?" }] })).input_tokens);
    expect(message.usage.output_tokens).toBeGreaterThan(0);
    expect(message.usage.output_tokens).toBeLessThanOrEqual(6);
    expect(["end_turn", "max_tokens"]).toContain(message.stop_reason);
  });

  it("streams POST /v1/chat/completions with usage in the last chunk", async () => {
    const client = new OpenAI({ apiKey: KEY, baseURL: `${server.url}/v1`, maxRetries: 0 });
    const stream = await client.chat.completions.create({ model: TEST_MODEL, max_tokens: 6, temperature: 0, stream: true, stream_options: { include_usage: true }, messages: [{ role: "user", content: "Say hello." }] });
    let text = "";
    let usage: OpenAI.CompletionUsage | undefined | null;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? "";
      usage = chunk.usage ?? usage;
    }
    expect(text.length).toBeGreaterThan(0);
    expect(usage?.completion_tokens).toBeGreaterThan(0);
    expect(usage?.prompt_tokens).toBeGreaterThan(5);
  });

  it("forces a tool call with tool_choice whose arguments are valid against the tool's schema (OpenAI)", async () => {
    const client = new OpenAI({ apiKey: KEY, baseURL: `${server.url}/v1`, maxRetries: 0 });
    const completion = await client.chat.completions.create({
      model: TEST_MODEL, max_tokens: 64, temperature: 0,
      messages: [{ role: "user", content: "What is the weather in Paris?" }],
      tools: [{ type: "function", function: weather }],
      tool_choice: { type: "function", function: { name: "get_weather" } },
    });
    expect(completion.choices[0]!.finish_reason).toBe("tool_calls");
    const call = completion.choices[0]!.message.tool_calls![0]!;
    if (call.type !== "function") throw new Error("expected a function call");
    expect(call.function.name).toBe("get_weather");
    expect(new Ajv().validate(WEATHER_SCHEMA, JSON.parse(call.function.arguments))).toBe(true);
  });

  it("forces tool use with an Anthropic tool_choice, the input valid against the input schema", async () => {
    const client = new Anthropic({ apiKey: KEY, baseURL: server.url, maxRetries: 0 });
    const message = await client.messages.create({
      model: TEST_MODEL, max_tokens: 64,
      messages: [{ role: "user", content: "What is the weather in Tokyo?" }],
      tools: [{ name: weather.name, description: weather.description, input_schema: WEATHER_SCHEMA }],
      tool_choice: { type: "tool", name: "get_weather" },
    });
    expect(message.stop_reason).toBe("tool_use");
    const use = message.content.find((block) => block.type === "tool_use");
    expect(use).toMatchObject({ name: "get_weather" });
    expect(new Ajv().validate(WEATHER_SCHEMA, use?.type === "tool_use" ? use.input : undefined)).toBe(true);
  });

  it("returns JSON matching a json_schema response_format", async () => {
    const client = new OpenAI({ apiKey: KEY, baseURL: `${server.url}/v1`, maxRetries: 0 });
    const completion = await client.chat.completions.create({
      model: TEST_MODEL, max_tokens: 64, temperature: 0,
      messages: [{ role: "user", content: "Describe the weather in Rome as JSON." }],
      response_format: { type: "json_schema", json_schema: { name: "weather", strict: true, schema: WEATHER_SCHEMA } },
    });
    expect(completion.choices[0]!.finish_reason).toBe("stop");
    expect(new Ajv().validate(WEATHER_SCHEMA, JSON.parse(completion.choices[0]!.message.content!))).toBe(true);
  });

  it("keeps serving when one of two streams decoding in shared steps is abandoned", async () => {
    const client = new OpenAI({ apiKey: KEY, baseURL: `${server.url}/v1`, maxRetries: 0 });
    const ask = (content: string, signal?: AbortSignal) =>
      client.chat.completions.create({ model: TEST_MODEL, max_tokens: 40, temperature: 0, stream: true, messages: [{ role: "user", content }] }, { signal });
    const leaving = new AbortController();
    const [abandoned, kept] = await Promise.all([ask("Tell a story about a kiln.", leaving.signal), ask("Tell a story about a river.")]);
    const read = async (stream: typeof kept, stopAfter = Infinity) => {
      let chunks = 0;
      let finish: string | null | undefined;
      try {
        for await (const chunk of stream) {
          finish = chunk.choices[0]?.finish_reason ?? finish;
          if (++chunks === stopAfter) leaving.abort();
        }
      } catch (error) {
        if (!leaving.signal.aborted) throw error;
      }
      return { chunks, finish };
    };
    const [left, finished] = await Promise.all([read(abandoned, 3), read(kept)]);
    expect(left.finish).toBeUndefined();
    expect(finished.finish).toMatch(/^(stop|length)$/);
    // The abandoned sequence's slot is free again: the next request is served.
    const next = await client.chat.completions.create({ model: TEST_MODEL, max_tokens: 4, temperature: 0, messages: [{ role: "user", content: "Say hi." }] });
    expect(next.choices[0]!.message.content!.length).toBeGreaterThan(0);
    await vi.waitFor(() => expect(server.engine.stats().activeSequences).toBe(0));
  });
});
