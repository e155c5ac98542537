import { describe, expect, it } from "vitest";
import { EngineError } from "../../../engine/index.js";
import { fromChatCompletionRequest } from "./request.js";

const base = { model: "m", messages: [{ role: "user", content: "Hi" }] };

function rejection(body: unknown): EngineError {
  try {
    fromChatCompletionRequest(body);
  } catch (error) {
    if (error instanceof EngineError) return error;
    throw error;
  }
  throw new Error("expected the request to be rejected");
}

describe("fromChatCompletionRequest", () => {
  it("merges system and developer messages into one system text and ignores unknown fields", () => {
    const { request } = fromChatCompletionRequest({
      ...base,
      prompt_cache_key: "k", reasoning_effort: "xhigh", store: true, metadata: { a: "b" }, foo: 1,
      messages: [
        { role: "system", content: [{ type: "text", text: "Be brief.", cache_control: { type: "ephemeral" } }] },
        { role: "user", content: "Hi" },
        { role: "developer", content: "Use English." },
      ],
    });
    expect(request.system).toBe("Be brief.\n\nUse English.");
    expect(request.messages).toEqual([{ role: "user", parts: [{ type: "text", text: "Hi" }] }]);
  });

  it("translates an assistant tool call round trip with null, empty and reasoning content", () => {
    const { request } = fromChatCompletionRequest({
      ...base,
      messages: [
        { role: "user", content: "Weather?" },
        { role: "assistant", content: null, reasoning_content: "Need a tool.", tool_calls: [{ id: "call_1", type: "function", function: { name: "get_weather", arguments: "{\"city\":\"Paris\"}" } }] },
        { role: "tool", tool_call_id: "call_1", content: [{ type: "text", text: "sunny" }] },
        { role: "assistant", content: "", tool_calls: [{ id: "call_2", type: "function", function: { name: "noop", arguments: "" } }] },
      ],
    });
    expect(request.messages.slice(1)).toEqual([
      { role: "assistant", parts: [{ type: "reasoning", text: "Need a tool." }, { type: "tool-call", id: "call_1", name: "get_weather", input: { city: "Paris" } }] },
      { role: "tool", parts: [{ type: "tool-result", toolCallId: "call_1", content: [{ type: "text", text: "sunny" }] }] },
      { role: "assistant", parts: [{ type: "tool-call", id: "call_2", name: "noop", input: {} }] },
    ]);
  });

  it("names the param of invalid tool-call arguments", () => {
    const error = rejection({ ...base, messages: [{ role: "assistant", content: null, tool_calls: [{ id: "c", type: "function", function: { name: "f", arguments: "{oops" } }] }] });
    expect(error.code).toBe("invalid_request");
    expect(error.details.param).toBe("messages.0.tool_calls.0.function.arguments");
  });

  it.each([
    [{ temperature: 3 }, "temperature"],
    [{ top_p: -0.1 }, "top_p"],
    [{ top_logprobs: 21, logprobs: true }, "top_logprobs"],
    [{ n: 0 }, "n"],
    [{ n: 17 }, "n"],
    [{ stream_options: { include_usage: true } }, "stream_options"],
    [{ stream: false, stream_options: { include_usage: false } }, "stream_options"],
    [{ top_logprobs: 2 }, "top_logprobs"],
    [{ seed: 2 ** 64 }, "seed"],
    [{ logit_bias: { abc: 1 } }, "logit_bias.abc"],
    [{ logit_bias: { 5: 101 } }, "logit_bias.5"],
    [{ max_tokens: 0 }, "max_tokens"],
    [{ messages: [{ role: "user", content: 5 }] }, "messages.0.content"],
    [{ messages: [{ role: "wizard", content: "x" }] }, "messages.0.role"],
    [{ tools: [{ type: "function", function: { name: "f" } }], tool_choice: { type: "function", function: { name: "g" } } }, "tool_choice"],
    [{ tool_choice: "required" }, "tool_choice"],
  ])("rejects %j with param %s", (fields, param) => {
    const error = rejection({ ...base, ...fields });
    expect(error.code).toBe("invalid_request");
    expect(error.details.param).toBe(param);
    expect(error.message).toContain(param);
  });

  it("prefers max_completion_tokens, accepts stop as a string or a long list, maps sampling", () => {
    const stops = Array.from({ length: 10 }, (_, i) => `<${i}>`);
    const { request } = fromChatCompletionRequest({ ...base, max_tokens: 100, max_completion_tokens: 7, stop: stops, temperature: 0, top_p: 0.5, seed: 4, presence_penalty: 1, frequency_penalty: -1 });
    expect(request.maxTokens).toBe(7);
    expect(request.stop).toEqual(stops);
    expect(request.sampling).toEqual({ temperature: 0, topP: 0.5, seed: 4, presencePenalty: 1, frequencyPenalty: -1 });
    expect(fromChatCompletionRequest({ ...base, stop: "END", max_tokens: 9 }).request).toMatchObject({ stop: ["END"], maxTokens: 9 });
    expect(fromChatCompletionRequest(base).request.maxTokens).toBeUndefined();
  });

  it("reads stream options on a stream, n, logprobs with their alternatives and logit_bias", () => {
    expect(fromChatCompletionRequest({ ...base, stream: true, stream_options: { include_usage: true } })).toMatchObject({ stream: true, includeUsage: true, n: 1 });
    const call = fromChatCompletionRequest({ ...base, n: 3, logprobs: true, top_logprobs: 2, logit_bias: { 42: -100 }, seed: 2 ** 62 });
    expect(call).toMatchObject({ n: 3, request: { logprobs: 2, sampling: { logitBias: { 42: -100 }, seed: 2 ** 62 } } });
    expect(fromChatCompletionRequest({ ...base, logprobs: true }).request.logprobs).toBe(0);
    expect(fromChatCompletionRequest({ ...base, logprobs: false }).request.logprobs).toBeUndefined();
  });

  it("maps response_format, tools and tool_choice", () => {
    const schema = { type: "object", properties: { a: { type: "string" } } };
    const tools = [{ type: "function", function: { name: "f", strict: true, parameters: schema } }, { type: "function", function: { name: "g" } }];
    const call = (fields: object) => fromChatCompletionRequest({ ...base, ...fields }).request;
    expect(call({ response_format: { type: "json_object" } }).responseFormat).toEqual({ type: "json" });
    expect(call({ response_format: { type: "json_schema", json_schema: { name: "x", strict: true, schema } } }).responseFormat).toEqual({ type: "json-schema", name: "x", schema });
    expect(call({ response_format: { type: "text" } }).responseFormat).toBeUndefined();
    expect(call({ tools }).tools).toEqual([{ name: "f", inputSchema: schema }, { name: "g", inputSchema: { type: "object", properties: {} } }]);
    expect(call({ tools }).toolChoice).toEqual({ type: "auto" });
    expect(call({ tools, tool_choice: "required", parallel_tool_calls: false }).toolChoice).toEqual({ type: "required", parallel: false });
    expect(call({ tools, tool_choice: "none" }).toolChoice).toEqual({ type: "none" });
    expect(call({ tools, tool_choice: { type: "function", function: { name: "g" } } }).toolChoice).toEqual({ type: "tool", name: "g" });
  });

  it("maps reasoning_effort to the thinking switch (none: off, any other effort: on) and refuses unknown efforts", () => {
    const thinking = (reasoning_effort: unknown) => fromChatCompletionRequest({ ...base, reasoning_effort }).request.thinking;
    expect(["none", "minimal", "low", "medium", "high", "xhigh", "max"].map(thinking)).toEqual([false, true, true, true, true, true, true]);
    expect(thinking(undefined)).toBeUndefined();
    expect(thinking(null)).toBeUndefined();
    expect(rejection({ ...base, reasoning_effort: "extreme" })).toMatchObject({
      message: "Invalid 'reasoning_effort': Expected one of none, minimal, low, medium, high, xhigh, max",
      details: { param: "reasoning_effort" },
    });
  });

    it("turns data: image URLs into base64 image parts", () => {
    const { request } = fromChatCompletionRequest({ ...base, messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: "data:image/png;base64,AAAA" } }] }] });
    expect(request.messages[0]!.parts).toEqual([{ type: "image", mediaType: "image/png", source: { kind: "base64", data: "AAAA" } }]);
  });
});
