/**
 * The Messages surface driven by the official SDK 1.x (which sends the API key as `Authorization: Bearer`)
 * against a real server with the real default model. Every stream the tests see goes through the checker.
 */
import Anthropic from "@anthropic-ai/sdk";
import { Ajv } from "ajv";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, TEST_MODEL, type TestServer } from "../helpers/server.js";
import { checkAnthropicStream, parseSse } from "../helpers/sse.js";

const KEY = "test-key-1";
// Generations are tiny, but a shared 2-core machine can make each token take a second.
const SLOW = { timeout: 600_000 };
const STOP_REASONS = ["end_turn", "max_tokens", "stop_sequence", "tool_use"];
const weatherTool = {
  name: "get_weather",
  description: "Get the current weather for a city",
  input_schema: {
    type: "object" as const,
    properties: { city: { type: "string" }, unit: { type: "string", enum: ["celsius", "fahrenheit"] } },
    required: ["city", "unit"],
    additionalProperties: false,
  },
};

let server: TestServer;
let client: Anthropic;

beforeAll(async () => {
  server = await startTestServer({ apiKeys: [KEY] });
  client = new Anthropic({ apiKey: KEY, baseURL: server.url, maxRetries: 0 });
});

afterAll(async () => {
  await server?.close();
});

/** Raw streaming call: returns the SSE text after checking the grammar. */
async function streamRaw(body: Record<string, unknown>): Promise<string> {
  const response = await fetch(`${server.url}/v1/messages?beta=true`, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json", authorization: `Bearer ${KEY}`, "anthropic-version": "2026-10-21" },
    body: JSON.stringify({ ...body, stream: true }),
  });
  expect(response.status).toBe(200);
  expect(response.headers.get("content-type")).toMatch(/^text\/event-stream/);
  expect(response.headers.get("request-id")).toMatch(/^req_/);
  const text = await response.text();
  expect(checkAnthropicStream(text)).toEqual([]);
  return text;
}

function expectMessageShape(message: Anthropic.Message): void {
  expect(message.id).toMatch(/^msg_/);
  expect(message.type).toBe("message");
  expect(message.role).toBe("assistant");
  expect(message.model).toBe(TEST_MODEL);
  expect(STOP_REASONS).toContain(message.stop_reason);
  for (const key of ["input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"] as const) {
    expect(Number.isInteger(message.usage[key])).toBe(true);
  }
  expect(message.usage.input_tokens + (message.usage.cache_read_input_tokens ?? 0)).toBeGreaterThan(0);
}

describe("messages.create", SLOW, () => {
  it("answers with a complete Message, a request id and JSON content type", async () => {
    const { data, response } = await client.messages
      .create({ model: TEST_MODEL, max_tokens: 8, messages: [{ role: "user", content: "Say hi" }] })
      .withResponse();
    expectMessageShape(data);
    expect(response.headers.get("content-type")).toBe("application/json");
    expect(response.headers.get("request-id")).toMatch(/^req_/);
    expect(data.content.every((block) => block.type === "text")).toBe(true);
  });

  it("stops at max_tokens with stop_reason max_tokens", async () => {
    const message = await client.messages.create({
      model: TEST_MODEL,
      max_tokens: 2,
      messages: [{ role: "user", content: "Write a long story about a dragon." }],
    });
    expect(message.stop_reason).toBe("max_tokens");
    expect(message.usage.output_tokens).toBe(2);
  });

  it("stops at a stop sequence and reports which one, without including it", async () => {
    const stops = [" ", "e", "."];
    const message = await client.messages.create({
      model: TEST_MODEL,
      max_tokens: 16,
      // SDK 1.x dropped `temperature` from its types (newest hosted models ignore it); kiln still honours it.
      ...({ temperature: 0 } as object),
      stop_sequences: stops,
      messages: [{ role: "user", content: "Describe the sea in one sentence." }],
    });
    expect(message.stop_reason).toBe("stop_sequence");
    expect(stops).toContain(message.stop_sequence);
    const text = message.content.map((block) => (block.type === "text" ? block.text : "")).join("");
    expect(text.endsWith(message.stop_sequence!)).toBe(false);
  });
});

describe("streaming", SLOW, () => {
  it("messages.stream().finalMessage() returns the Message and the concatenated deltas equal the non-streaming text", async () => {
    const params = { model: TEST_MODEL, max_tokens: 6, temperature: 0, top_k: 1, messages: [{ role: "user" as const, content: "Name a colour." }] };
    const final = await client.messages.stream(params).finalMessage();
    expectMessageShape(final);
    const text = await streamRaw(params);
    const streamed = parseSse(text).filter((e) => e.json?.delta?.type === "text_delta").map((e) => e.json.delta.text).join("");
    const plain = await client.messages.create(params);
    expect(plain.content.map((block) => (block.type === "text" ? block.text : "")).join("")).toBe(streamed);
    expect(final.content.map((block) => (block.type === "text" ? block.text : "")).join("")).toBe(streamed);
  });
});

describe("tool use", SLOW, () => {
  const validate = new Ajv().compile(weatherTool.input_schema);

  it("tool_choice tool forces a call whose input validates against the schema", async () => {
    const message = await client.messages.create({
      model: TEST_MODEL,
      max_tokens: 48,
      tools: [weatherTool],
      tool_choice: { type: "tool", name: "get_weather", disable_parallel_tool_use: true },
      messages: [{ role: "user", content: "What is the weather in Paris?" }],
    });
    expect(message.stop_reason).toBe("tool_use");
    const calls = message.content.filter((block) => block.type === "tool_use");
    expect(calls).toHaveLength(1);
    expect(calls[0]!.id).toMatch(/^toolu_/);
    expect(calls[0]!.name).toBe("get_weather");
    expect(validate(calls[0]!.input), JSON.stringify(validate.errors)).toBe(true);
  });

  it("tool_choice any streams the call as input_json_delta and a two-turn loop with tool_result completes", async () => {
    const first = await client.messages.stream({
      model: TEST_MODEL,
      max_tokens: 48,
      tools: [weatherTool],
      tool_choice: { type: "any" },
      messages: [{ role: "user", content: "What is the weather in Oslo?" }],
    }).finalMessage();
    const call = first.content.find((block) => block.type === "tool_use");
    expect(first.stop_reason).toBe("tool_use");
    expect(call && validate(call.input)).toBe(true);

    const followUp = {
      model: TEST_MODEL,
      max_tokens: 4,
      tools: [weatherTool],
      messages: [
        { role: "user" as const, content: "What is the weather in Oslo?" },
        { role: "assistant" as const, content: first.content },
        { role: "user" as const, content: [{ type: "tool_result" as const, tool_use_id: call!.id, content: [{ type: "text" as const, text: "12 degrees and raining" }] }] },
      ],
    };
    const text = await streamRaw(followUp);
    expect(parseSse(text)[0]?.json.message.usage.input_tokens + parseSse(text)[0]?.json.message.usage.cache_read_input_tokens).toBeGreaterThan(0);
    const second = await client.messages.create({
      ...followUp,
      messages: [...followUp.messages.slice(0, 2), { role: "user", content: [{ type: "tool_result", tool_use_id: call!.id, content: "city not found", is_error: true }] }],
    });
    expect(STOP_REASONS).toContain(second.stop_reason);
  });
});

// Models listing reads no model output: it is in models.test.ts, on the scripted model.
describe("count_tokens", SLOW, () => {
  it("count_tokens equals the prompt tokens a Messages call reports (input + cache read)", async () => {
    const params = { model: TEST_MODEL, system: "Be brief.", messages: [{ role: "user" as const, content: "Count my tokens, please." }] };
    const counted = await client.messages.countTokens(params);
    const message = await client.messages.create({ ...params, max_tokens: 1 });
    expect(counted.input_tokens).toBe(message.usage.input_tokens + (message.usage.cache_read_input_tokens ?? 0));
  });
});

describe("errors the model decides", () => {
  async function expectInvalid(body: Record<string, unknown>, message: RegExp): Promise<void> {
    const response = await fetch(`${server.url}/v1/messages`, { method: "POST", headers: { "content-type": "application/json", "x-api-key": KEY }, body: JSON.stringify(body) });
    expect(response.status).toBe(400);
    expect(response.headers.get("content-type")).toBe("application/json");
    expect(response.headers.get("x-should-retry")).toBe("false");
    const requestId = response.headers.get("request-id");
    expect(requestId).toMatch(/^req_/);
    const json = await response.json();
    expect(json).toMatchObject({ type: "error", error: { type: "invalid_request_error" }, request_id: requestId });
    expect(json.error.message).toMatch(message);
  }

  it("rejects images for a text-only model and reports context overflow in Claude Code's words", async () => {
    const hello = { model: TEST_MODEL, max_tokens: 2 };
    const image = { type: "image", source: { type: "base64", media_type: "image/png", data: "iVBORw0KGgo=" } };
    await expectInvalid({ ...hello, messages: [{ role: "user", content: [image] }] }, /image/);
    const long = "word ".repeat(3000);
    await expectInvalid({ ...hello, messages: [{ role: "user", content: long }] }, /^prompt is too long: \d+ tokens > 2048 maximum$/);
  });

  // The local backends' grammar builder refuses it while planning the generation.
  it("answers 400 naming the tool and the $ref for a malformed $ref in a forced tool's schema", async () => {
    const badRef = { type: "object", properties: { a: { $ref: "#/$defs/%" } }, $defs: { "%": { type: "string" } } };
    await expectInvalid(
      { model: TEST_MODEL, max_tokens: 1, messages: [{ role: "user", content: "Hi" }], tools: [{ name: "pick", input_schema: badRef }], tool_choice: { type: "any" } },
      /^tools\[pick\]\.input_schema: \$ref "#\/\$defs\/%" is not a valid JSON pointer/,
    );
  });
});
