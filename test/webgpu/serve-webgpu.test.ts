/**
 * The real default model served from the WebGPU backend, through both surfaces with the official SDKs: a short
 * non-streaming Anthropic message and a streamed OpenAI chat completion, each with real usage.
 */
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, TEST_MODEL, type TestServer } from "../helpers/server.js";
import { webGpuAvailable } from "../helpers/webgpu.js";

const available = await webGpuAvailable();
const KEY = "webgpu-key";
let server: TestServer;

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
});
