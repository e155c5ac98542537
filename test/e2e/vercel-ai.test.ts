/** The Vercel AI SDK (`ai` 5 + `@ai-sdk/openai-compatible` 1) streams text and a tool call from a real kiln server. */
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { jsonSchema, streamText, tool } from "ai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkRecordedStreams } from "../helpers/openai-stream.js";
import { MODEL_ID, TEST_KEY, startOpenAITestServer, type OpenAITestServer } from "../helpers/openai-server.js";

let kiln: OpenAITestServer;
beforeAll(async () => { kiln = await startOpenAITestServer(); });
afterAll(async () => {
  expect(await checkRecordedStreams(kiln.recorder)).toEqual([]);
  await kiln?.close();
});

function provider() {
  return createOpenAICompatible({ name: "kiln", baseURL: kiln.baseURL, apiKey: TEST_KEY, includeUsage: true, fetch: kiln.recorder.fetch });
}

describe("Vercel AI SDK", { timeout: 400_000 }, () => {
  it("streams text with usage", async () => {
    const result = streamText({ model: provider()(MODEL_ID), prompt: "Say hello", maxOutputTokens: 12, maxRetries: 0 });
    let text = "";
    for await (const delta of result.textStream) text += delta;
    expect(text.length).toBeGreaterThan(0);
    expect(["stop", "length"]).toContain(await result.finishReason);
    expect((await result.usage).outputTokens).toBeGreaterThan(0);
  });

  it("streams a tool call with parsed input", async () => {
    const result = streamText({
      model: provider()(MODEL_ID),
      prompt: "What is the weather in Paris?",
      tools: { get_weather: tool({ description: "Current weather of a city", inputSchema: jsonSchema<{ city: string }>({ type: "object", properties: { city: { type: "string" } }, required: ["city"] }) }) },
      toolChoice: "required",
      maxOutputTokens: 40,
      maxRetries: 0,
    });
    const calls = await result.toolCalls;
    expect(await result.finishReason).toBe("tool-calls");
    expect(calls[0]).toMatchObject({ toolName: "get_weather", input: { city: expect.any(String) } });
  });
});
