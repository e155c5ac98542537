/** POST /v1/responses (the Responses API Codex uses) against a real server with the official openai SDK. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkRecordedStreams } from "../helpers/openai-stream.js";
import { MODEL_ID, TEST_CONTEXT, startOpenAITestServer, type OpenAITestServer } from "../helpers/openai-server.js";

let kiln: OpenAITestServer;
beforeAll(async () => { kiln = await startOpenAITestServer(); });
afterAll(async () => {
  expect(await checkRecordedStreams(kiln.recorder)).toEqual([]);
  await kiln?.close();
});

// An enum keeps the forced arguments short enough for a bounded generation.
const listFiles = { type: "function" as const, name: "list_files", description: "List the files of a folder", strict: false, parameters: { type: "object", properties: { dir: { type: "string", enum: [".", "src"] } }, required: ["dir"] } };

describe("responses", { timeout: 400_000 }, () => {
  it("answers without streaming, with instructions and developer input as one system text", async () => {
    const response = await kiln.client.responses.create({
      model: MODEL_ID,
      instructions: "Be brief.",
      input: [{ type: "message", role: "developer", content: [{ type: "input_text", text: "Answer in English." }] }, { role: "user", content: "Say hi" }],
      max_output_tokens: 8,
      store: false,
    });
    expect(response).toMatchObject({ object: "response", model: MODEL_ID });
    expect(["completed", "incomplete"]).toContain(response.status);
    expect(response.output_text.length).toBeGreaterThan(0);
    expect(response.usage!.total_tokens).toBe(response.usage!.input_tokens + response.usage!.output_tokens);
  });

  it("streams events the SDK stream helper accepts, ending in response.completed", async () => {
    const stream = kiln.client.responses.stream({ model: MODEL_ID, input: "Say hi", max_output_tokens: 8 });
    const types: string[] = [];
    for await (const event of stream) types.push(event.type);
    const final = await stream.finalResponse();
    expect(types[0]).toBe("response.created");
    expect(types.at(-1)).toBe("response.completed");
    expect(final.output_text.length).toBeGreaterThan(0);
    expect(Number.isInteger(final.usage!.input_tokens_details.cached_tokens)).toBe(true);
  });

  it("streams a forced function call as a function_call item with JSON arguments, and takes its output back", async () => {
    const stream = kiln.client.responses.stream({ model: MODEL_ID, input: "List the files", tools: [listFiles, { type: "web_search" } as never], tool_choice: "required", max_output_tokens: 40, parallel_tool_calls: false });
    const final = await stream.finalResponse();
    const call = final.output.find((item) => item.type === "function_call")!;
    expect(final.status).toBe("completed");
    expect(call).toMatchObject({ type: "function_call", name: "list_files", call_id: expect.stringMatching(/^call_/) });
    if (call.type !== "function_call") return;
    expect([".", "src"]).toContain(JSON.parse(call.arguments).dir);
    const next = await kiln.client.responses.create({
      model: MODEL_ID, max_output_tokens: 4,
      input: [{ role: "user", content: "List the files" }, { type: "function_call", name: call.name, arguments: call.arguments, call_id: call.call_id }, { type: "function_call_output", call_id: call.call_id, output: "a.txt\n" }],
    });
    expect(next.status).not.toBe("failed");
  });

  it("rejects a prompt longer than the context with context_length_exceeded", async () => {
    const long = "lorem ipsum dolor sit amet ".repeat(TEST_CONTEXT);
    await expect(kiln.client.responses.create({ model: MODEL_ID, input: long, max_output_tokens: 1 })).rejects.toMatchObject({ status: 400, code: "context_length_exceeded" });
  });
});
