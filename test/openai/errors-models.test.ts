/** Models listing and every error status of the OpenAI surface, through the official openai SDK. */
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MODEL_ALIAS, MODEL_ID, TEST_CONTEXT, TEST_KEY, startOpenAITestServer, type OpenAITestServer } from "../helpers/openai-server.js";

let kiln: OpenAITestServer;
beforeAll(async () => { kiln = await startOpenAITestServer(); });
afterAll(async () => { await kiln?.close(); });

const ask = [{ role: "user" as const, content: "Hi" }];

describe("models", () => {
  it("lists and retrieves models, also by an Org/Name alias sent as Org%2FName", async () => {
    const page = await kiln.client.models.list();
    const item = page.data.find((model) => model.id === MODEL_ID)!;
    expect(item).toMatchObject({ object: "model", owned_by: expect.any(String) });
    expect(Number.isInteger(item.created)).toBe(true);
    expect(await kiln.client.models.retrieve(MODEL_ID)).toMatchObject({ id: MODEL_ID, object: "model" });
    expect(await kiln.client.models.retrieve(MODEL_ALIAS)).toMatchObject({ id: MODEL_ID, object: "model" });
  });

  it("answers a wrong key with 401 invalid_api_key in OpenAI's shape", async () => {
    const error = await kiln.clientWithKey("sk-wrong").models.list().catch((caught) => caught);
    expect(error).toBeInstanceOf(OpenAI.AuthenticationError);
    expect(error).toMatchObject({ status: 401, code: "invalid_api_key", param: null, type: expect.any(String) });
    expect(error.requestID).toMatch(/^req_/);
  });

  it("answers a missing key with 401 and a JSON message", async () => {
    const response = await fetch(`${kiln.baseURL}/models`);
    expect(response.status).toBe(401);
    expect(typeof (await response.json()).error.message).toBe("string");
  });

  it("answers an unknown model with 404 model_not_found, for retrieval and generation", async () => {
    await expect(kiln.client.models.retrieve("nope/unknown")).rejects.toMatchObject({ status: 404, code: "model_not_found" });
    const error = await kiln.client.chat.completions.create({ model: "gpt-unknown", messages: ask, max_tokens: 1 }).catch((caught) => caught);
    expect(error).toBeInstanceOf(OpenAI.NotFoundError);
    expect(error).toMatchObject({ code: "model_not_found", param: "model" });
    expect(error.message).toContain("The model `gpt-unknown` does not exist");
  });
});

describe("request errors", { timeout: 300_000 }, () => {
  it.each([
    [{ temperature: 3 }, "temperature"],
    [{ top_logprobs: 21, logprobs: true }, "top_logprobs"],
    [{ n: 17 }, "n"],
  ])("rejects %j with 400 invalid_request_error and param %s", async (fields, param) => {
    const error = await kiln.client.chat.completions.create({ model: MODEL_ID, messages: ask, max_tokens: 1, ...fields }).catch((caught) => caught);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect(error).toMatchObject({ type: "invalid_request_error", param });
    expect(error.headers.get("x-should-retry")).toBe("false");
  });

  it("rejects a prompt longer than the context with 400 context_length_exceeded", async () => {
    const long = "lorem ipsum dolor sit amet ".repeat(TEST_CONTEXT);
    const error = await kiln.client.chat.completions.create({ model: MODEL_ID, messages: [{ role: "user", content: long }], max_tokens: 1 }).catch((caught) => caught);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect(error).toMatchObject({ code: "context_length_exceeded", param: "messages" });
  });

  it("rejects malformed JSON and unknown routes in OpenAI's shape", async () => {
    const headers = { authorization: `Bearer ${TEST_KEY}`, "content-type": "application/json" };
    const malformed = await fetch(`${kiln.baseURL}/chat/completions`, { method: "POST", headers, body: "{" });
    expect(malformed.status).toBe(400);
    expect((await malformed.json()).error).toMatchObject({ type: "invalid_request_error", message: expect.any(String) });
    const unknown = await fetch(`${kiln.baseURL}/embeddings`, { method: "POST", headers, body: "{}" });
    expect(unknown.status).toBe(404);
    expect((await unknown.json()).error).toHaveProperty("message");
  });
});
