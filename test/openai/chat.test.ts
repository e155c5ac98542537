/**
 * POST /v1/chat/completions against a real server and the real model, with the official openai SDK as client.
 * Every stream the SDK reads is also checked from its raw bytes (test/helpers/openai-stream.ts). Routing (doubled
 * slashes, no /v1 prefix), models, auth and field validation read no model output: they are in validation.test.ts,
 * on the scripted model.
 */
import { Ajv } from "ajv";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkRecordedStreams } from "../helpers/openai-stream.js";
import { MODEL_ID, TEST_CONTEXT, TEST_KEY, startOpenAITestServer, type OpenAITestServer } from "../helpers/openai-server.js";

const WEATHER_SCHEMA = {
  type: "object",
  properties: { city: { type: "string" }, unit: { type: "string", enum: ["celsius", "fahrenheit"] } },
  required: ["city", "unit"],
  additionalProperties: false,
};
const tools = [
  { type: "function" as const, function: { name: "get_weather", description: "Current weather of a city", parameters: WEATHER_SCHEMA, strict: true } },
  { type: "function" as const, function: { name: "get_time", description: "Current time", parameters: { type: "object", properties: {} } } },
];
const ask = [{ role: "user" as const, content: "What is the weather in Paris?" }];

let kiln: OpenAITestServer;
beforeAll(async () => { kiln = await startOpenAITestServer(); });
afterAll(async () => {
  expect(await checkRecordedStreams(kiln.recorder)).toEqual([]);
  await kiln?.close();
});

// The CPU is shared; grammar-constrained requests can take minutes there.
describe("chat completions", { timeout: 400_000 }, () => {
  it("creates a completion with the documented shape, real usage and a request id", async () => {
    const { data, response } = await kiln.client.chat.completions.create({
      model: MODEL_ID,
      messages: [{ role: "system", content: "Be brief." }, { role: "developer", content: "Answer in English." }, ...ask],
      max_tokens: 12,
      // Unknown and newer fields are accepted and ignored.
      ...({ prompt_cache_key: "k", reasoning_effort: "max", store: false, foo: 1 } as object),
    }).withResponse();
    expect(response.headers.get("content-type")).toContain("application/json");
    expect(response.headers.get("x-request-id")).toMatch(/^req_/);
    expect(data).toMatchObject({ object: "chat.completion", model: MODEL_ID });
    expect(Number.isInteger(data.created)).toBe(true);
    expect(data.choices[0]!.message).toMatchObject({ role: "assistant", refusal: null });
    expect(typeof data.choices[0]!.message.content).toBe("string");
    expect(["stop", "length"]).toContain(data.choices[0]!.finish_reason);
    const usage = data.usage!;
    expect(usage.prompt_tokens).toBeGreaterThan(10);
    expect(usage.completion_tokens).toBeGreaterThan(0);
    expect(usage.completion_tokens).toBeLessThanOrEqual(12);
    expect(usage.total_tokens).toBe(usage.prompt_tokens + usage.completion_tokens);
    expect(Number.isInteger(usage.prompt_tokens_details?.cached_tokens)).toBe(true);
  });

  it("streams chunks that the SDK stream helper accepts", async () => {
    const final = await kiln.client.chat.completions.stream({ model: MODEL_ID, messages: ask, max_tokens: 16, temperature: 0 }).finalChatCompletion();
    expect(final.choices[0]!.message.role).toBe("assistant");
    expect(final.choices[0]!.message.content?.length).toBeGreaterThan(0);
  });

  it("sends the include_usage chunk last, with empty choices", async () => {
    const stream = await kiln.client.chat.completions.create({ model: MODEL_ID, messages: ask, max_tokens: 8, stream: true, stream_options: { include_usage: true } });
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);
    const last = chunks.at(-1)!;
    expect(last.choices).toEqual([]);
    expect(last.usage!.completion_tokens).toBeGreaterThan(0);
    expect(last.usage!.total_tokens).toBe(last.usage!.prompt_tokens + last.usage!.completion_tokens);
    expect(chunks.slice(0, -1).every((chunk) => chunk.usage === null)).toBe(true);
  });

  it("honours max_completion_tokens over max_tokens and reports length", async () => {
    const data = await kiln.client.chat.completions.create({ model: MODEL_ID, messages: ask, max_tokens: 40, max_completion_tokens: 2 });
    expect(data.usage!.completion_tokens).toBeLessThanOrEqual(2);
    expect(data.choices[0]!.finish_reason).toBe("length");
  });

  it("accepts a stop list of ten strings and a single stop string; stop text is not returned", async () => {
    const stops = ["\n", ".", ",", "!", "?", ":", ";", "Paris", "The", "the"];
    const data = await kiln.client.chat.completions.create({ model: MODEL_ID, messages: ask, max_tokens: 24, temperature: 0, stop: stops });
    const text = data.choices[0]!.message.content ?? "";
    for (const stop of stops) expect(text.includes(stop)).toBe(false);
    const single = await kiln.client.chat.completions.create({ model: MODEL_ID, messages: ask, max_tokens: 24, temperature: 0, stop: " " });
    expect(single.choices[0]!.message.content).not.toContain(" ");
  });

  it("forces a named tool call whose arguments parse and validate (streamed through the SDK helper)", async () => {
    const final = await kiln.client.chat.completions.stream({
      model: MODEL_ID, messages: ask, tools, max_tokens: 48, tool_choice: { type: "function", function: { name: "get_weather" } },
    }).finalChatCompletion();
    const choice = final.choices[0]!;
    expect(choice.finish_reason).toBe("tool_calls");
    const call = choice.message.tool_calls![0]!;
    expect(call.type).toBe("function");
    if (call.type !== "function") return;
    expect(call.id).toMatch(/^call_./);
    expect(call.function.name).toBe("get_weather");
    expect(new Ajv().validate(WEATHER_SCHEMA, JSON.parse(call.function.arguments))).toBe(true);
  });

  it("forces some tool call with tool_choice required, at most one without parallel calls, and takes the result back", async () => {
    const first = await kiln.client.chat.completions.create({ model: MODEL_ID, messages: ask, tools, tool_choice: "required", parallel_tool_calls: false, max_tokens: 40 });
    const message = first.choices[0]!.message;
    expect(first.choices[0]!.finish_reason).toBe("tool_calls");
    expect(message.tool_calls).toHaveLength(1);
    const call = message.tool_calls![0]!;
    if (call.type !== "function") throw new Error("expected a function call");
    expect(["get_weather", "get_time"]).toContain(call.function.name);
    expect(() => JSON.parse(call.function.arguments)).not.toThrow();
    const second = await kiln.client.chat.completions.create({
      model: MODEL_ID,
      tools,
      max_tokens: 4,
      messages: [...ask, { role: "assistant", content: null, tool_calls: message.tool_calls }, { role: "tool", tool_call_id: call.id, content: [{ type: "text", text: "18 degrees and sunny" }] }],
    });
    expect(second.choices[0]!.message.role).toBe("assistant");
    expect(second.usage!.prompt_tokens).toBeGreaterThan(first.usage!.prompt_tokens);
  });

  it("returns JSON valid against a json_schema response_format, and JSON for json_object", async () => {
    const schema = { type: "object", properties: { name: { type: "string" }, age: { type: "integer" } }, required: ["name", "age"], additionalProperties: false };
    const data = await kiln.client.chat.completions.create({
      model: MODEL_ID, max_tokens: 48, messages: [{ role: "user", content: "Invent a person." }],
      response_format: { type: "json_schema", json_schema: { name: "person", strict: true, schema } },
    });
    if (data.choices[0]!.finish_reason === "stop") expect(new Ajv().validate(schema, JSON.parse(data.choices[0]!.message.content!))).toBe(true);
    else expect(data.choices[0]!.message.content!.trimStart().startsWith("{")).toBe(true);
    const object = await kiln.client.chat.completions.create({ model: MODEL_ID, max_tokens: 48, messages: [{ role: "user", content: "Reply with {}" }], response_format: { type: "json_object" } });
    expect(object.choices[0]!.message.content!.trimStart().startsWith("{")).toBe(true);
  });
});

// Errors only the real model decides: a prompt over the context is counted by the real tokenizer, and a schema is
// compiled by the local backends' grammar builder. Errors that need no model are in validation.test.ts.
describe("request errors the model decides", { timeout: 300_000 }, () => {
  it("rejects a prompt longer than the context with 400 context_length_exceeded", async () => {
    const long = "lorem ipsum dolor sit amet ".repeat(TEST_CONTEXT);
    const error = await kiln.client.chat.completions.create({ model: MODEL_ID, messages: [{ role: "user", content: long }], max_tokens: 1 }).catch((caught) => caught);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect(error).toMatchObject({ code: "context_length_exceeded", param: "messages" });
  });

  it("answers 400 naming response_format for a malformed $ref in a JSON schema response format", async () => {
    const badRef = { type: "object", properties: { a: { $ref: "#/$defs/%" } }, $defs: { "%": { type: "string" } } };
    const response = await fetch(`${kiln.baseURL}/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${TEST_KEY}` },
      body: JSON.stringify({ model: MODEL_ID, max_tokens: 1, messages: [{ role: "user", content: "Hi" }], response_format: { type: "json_schema", json_schema: { name: "x", schema: badRef } } }),
    });
    expect(response.status).toBe(400);
    const body = await response.json();
    expect(body).toMatchObject({ error: { message: expect.any(String), type: "invalid_request_error", code: null } });
    expect(Object.keys(body.error).sort()).toEqual(["code", "message", "param", "type"]);
    expect(body.error).toMatchObject({ param: "response_format", message: expect.stringMatching(/^response_format\.schema: \$ref "#\/\$defs\/%"/) });
  });
});
