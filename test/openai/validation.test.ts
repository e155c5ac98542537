/**
 * What the OpenAI surface decides before any model runs, through the official openai SDK and raw HTTP, in-process
 * and on a real loopback port: models listing and retrieval (also by an `Org/Name` alias), 401 and 404 in OpenAI's
 * shape, field validation (400 naming the param), malformed JSON, JSON nested too deep, and routing (no /v1 prefix,
 * doubled slashes). The model is scripted (it replays a recorded reply under the real default model's id): none of
 * these answers depends on what a model generates. What does (context overflow, token ids checked against the
 * vocabulary, a schema the grammar builder refuses, logprobs, tools) stays with the real model in chat.test.ts and
 * compat.test.ts.
 */
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { describe, expect, it } from "vitest";
import { startScriptedEngine } from "../helpers/scripted-engine.js";
import { describeMatrix } from "../helpers/server-matrix.js";
import { MODEL_ALIAS, MODEL_ID, TEST_KEY } from "../helpers/openai-server.js";

const ask = [{ role: "user" as const, content: "Hi" }];
const deep = (levels: number) => `${"[".repeat(levels)}1${"]".repeat(levels)}`;
const setup = { engine: () => startScriptedEngine({ recording: ["openai", "chat-text"], aliases: [MODEL_ALIAS] }), options: { apiKeys: [TEST_KEY] } };

describeMatrix("OpenAI validation", setup, (server) => {
  const clientWithKey = (apiKey: string, baseURL = `${server.url}/v1`) => new OpenAI({ apiKey, baseURL, maxRetries: 0, fetch: server.fetch });
  const client = () => clientWithKey(TEST_KEY);
  const headers = { authorization: `Bearer ${TEST_KEY}`, "content-type": "application/json" };

  /** POSTs raw JSON text (so depth is not limited by the client's own JSON.stringify). */
  async function post(path: string, text: string): Promise<{ status: number; body: any }> { // eslint-disable-line @typescript-eslint/no-explicit-any
    const response = await server.fetch(`${server.url}${path}`, { method: "POST", headers, body: text });
    return { status: response.status, body: await response.json() };
  }

  describe("models", () => {
    it("lists and retrieves models, also by an Org/Name alias sent as Org%2FName", async () => {
      const page = await client().models.list();
      const item = page.data.find((model) => model.id === MODEL_ID)!;
      expect(item).toMatchObject({ object: "model", owned_by: expect.any(String) });
      expect(Number.isInteger(item.created)).toBe(true);
      expect(await client().models.retrieve(MODEL_ID)).toMatchObject({ id: MODEL_ID, object: "model" });
      expect(await client().models.retrieve(MODEL_ALIAS)).toMatchObject({ id: MODEL_ID, object: "model" });
    });

    it("answers a wrong key with 401 invalid_api_key in OpenAI's shape", async () => {
      const error = await clientWithKey("sk-wrong").models.list().catch((caught) => caught);
      expect(error).toBeInstanceOf(OpenAI.AuthenticationError);
      expect(error).toMatchObject({ status: 401, code: "invalid_api_key", param: null, type: expect.any(String) });
      expect(error.requestID).toMatch(/^req_/);
    });

    it("answers a missing key with 401 and a JSON message", async () => {
      const response = await server.fetch(`${server.url}/v1/models`);
      expect(response.status).toBe(401);
      expect(typeof (await response.json()).error.message).toBe("string");
    });

    it("answers an unknown model with 404 model_not_found, for retrieval and generation", async () => {
      await expect(client().models.retrieve("nope/unknown")).rejects.toMatchObject({ status: 404, code: "model_not_found" });
      const error = await client().chat.completions.create({ model: "gpt-unknown", messages: ask, max_tokens: 1 }).catch((caught) => caught);
      expect(error).toBeInstanceOf(OpenAI.NotFoundError);
      expect(error).toMatchObject({ code: "model_not_found", param: "model" });
      expect(error.message).toContain("The model `gpt-unknown` does not exist");
    });
  });

  describe("request errors", () => {
    it.each([
      [{ temperature: 3 }, "temperature"],
      [{ top_logprobs: 21, logprobs: true }, "top_logprobs"],
      [{ n: 17 }, "n"],
    ])("rejects %j with 400 invalid_request_error and param %s", async (fields, param) => {
      const error = await client().chat.completions.create({ model: MODEL_ID, messages: ask, max_tokens: 1, ...fields }).catch((caught) => caught);
      expect(error).toBeInstanceOf(OpenAI.BadRequestError);
      expect(error).toMatchObject({ type: "invalid_request_error", param });
      expect(error.headers.get("x-should-retry")).toBe("false");
    });

    // Out-of-vocabulary logit_bias ids are checked against the real vocabulary: that half is in compat.test.ts.
    it("refuses a logit_bias key that is no token id, stream_options without stream and a seed beyond 64 bits, naming the field", async () => {
      const refused = (body: object) => client().chat.completions.create({ model: MODEL_ID, messages: ask, max_tokens: 2, ...body } as never).then(() => undefined, (error) => error);
      expect(await refused({ logit_bias: { "-1": 5 } })).toMatchObject({ status: 400, param: expect.stringContaining("logit_bias") });
      expect(await refused({ stream_options: { include_usage: true } })).toMatchObject({ status: 400, param: "stream_options" });
      expect(await refused({ seed: 2 ** 64 })).toMatchObject({ status: 400, param: "seed" });
    });

    // JSON.parse reads 2^63 - 1 and 2^63 alike (and -2^63, -2^63 - 1): the raw text shows the boundaries are exact.
    it("takes a seed anywhere in the signed 64-bit range on every route that samples, and refuses one beyond it", async () => {
      const bodies: Array<[string, string]> = [
        ["/v1/chat/completions", `{"model":"${MODEL_ID}","max_tokens":2,"messages":[{"role":"user","content":"Hi"}],"seed":SEED}`],
        ["/v1/completions", `{"model":"${MODEL_ID}","max_tokens":2,"prompt":"Hi","seed":SEED}`],
        ["/v1/responses", `{"model":"${MODEL_ID}","max_output_tokens":2,"input":"Hi","seed":SEED}`],
      ];
      for (const [path, template] of bodies) {
        for (const seed of ["9223372036854775807", "-9223372036854775808", "0", "-1"]) {
          expect((await post(path, template.replace("SEED", seed))).status, `${path} ${seed}`).toBe(200);
        }
        for (const seed of ["9223372036854775808", "-9223372036854775809", "18446744073709551616", "1e19", "1.5"]) {
          const { status, body } = await post(path, template.replace("SEED", seed));
          expect([status, body.error?.param, body.error?.type], `${path} ${seed}`).toEqual([400, "seed", "invalid_request_error"]);
        }
      }
    });

    // Whether a server-tool echo is then rendered into the prompt is in compat.test.ts.
    it("refuses an Anthropic content block of an unknown type, naming it", async () => {
      const anthropic = new Anthropic({ apiKey: TEST_KEY, baseURL: server.url, maxRetries: 0, fetch: server.fetch });
      const error = await anthropic.messages.create({ model: MODEL_ID, max_tokens: 2, messages: [{ role: "user", content: [{ type: "bogus", text: "x" } as never] }] }).catch((caught) => caught);
      expect(error).toMatchObject({ status: 400 });
      expect(error.error.error.message).toMatch(/^messages\.0\.content\.0\.type: unknown content block type "bogus"/);
    });

    it("rejects malformed JSON and unknown routes in OpenAI's shape", async () => {
      const malformed = await server.fetch(`${server.url}/v1/chat/completions`, { method: "POST", headers, body: "{" });
      expect(malformed.status).toBe(400);
      expect((await malformed.json()).error).toMatchObject({ type: "invalid_request_error", message: expect.any(String) });
      const unknown = await server.fetch(`${server.url}/v1/audio/speech`, { method: "POST", headers, body: "{}" });
      expect(unknown.status).toBe(404);
      expect((await unknown.json()).error).toHaveProperty("message");
    });

    it("answers JSON nested 10,000 levels deep with a 400 naming the path and the limit, on every surface and field", async () => {
      const toolUse = `{"model":"${MODEL_ID}","max_tokens":2,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"f","input":{"a":${deep(10_000)}}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]}],"tools":[{"name":"f","input_schema":{"type":"object"}}]}`;
      const cases: Array<[string, string, string]> = [
        ["/v1/messages", toolUse, "messages.1.content.0.input.a.0.0"],
        ["/v1/messages/count_tokens", toolUse, "messages.1.content.0.input.a.0.0"],
        ["/v1/messages", `{"model":"${MODEL_ID}","max_tokens":2,"messages":[{"role":"user","content":"hi"}],"tools":[{"name":"f","input_schema":{"type":"object","properties":{"a":${deep(10_000)}}}}]}`, "tools.0.input_schema.properties.a.0.0.0"],
        ["/v1/chat/completions", `{"model":"${MODEL_ID}","max_tokens":2,"messages":[{"role":"user","content":"hi"}],"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"items":${deep(10_000)}}}}}`, "response_format.json_schema.schema.items.0.0.0.0"],
        ["/v1/chat/completions", `{"model":"${MODEL_ID}","max_tokens":2,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":${JSON.stringify(`{"a":${deep(10_000)}}`)}}}]},{"role":"tool","tool_call_id":"c1","content":"ok"}]}`, "messages.1.tool_calls.0.function.arguments.a.0.0"],
        ["/v1/responses", `{"model":"${MODEL_ID}","max_output_tokens":2,"input":[{"type":"function_call","call_id":"c1","name":"f","arguments":${JSON.stringify(deep(10_000))}},{"type":"function_call_output","call_id":"c1","output":"ok"}]}`, "input.0.arguments.0.0.0"],
        ["/v1/responses", `{"model":"${MODEL_ID}","input":${deep(10_000)}}`, "input.0.0.0.0.0.0.0"],
      ];
      for (const [path, text, where] of cases) {
        const { status, body } = await post(path, text);
        expect(status, path).toBe(400);
        expect(body.error.type, path).toBe("invalid_request_error");
        expect(body.error.message, path).toMatch(new RegExp(`^${where.replace(/\./g, "\\.")}.*: JSON nested deeper than 100 levels$`));
      }
    });
  });

  describe("routing", () => {
    it("serves the OpenAI routes without the /v1 prefix", async () => {
      const bare = clientWithKey(TEST_KEY, server.url);
      expect((await bare.models.list()).data.map((model) => model.id)).toContain(MODEL_ID);
      expect(await bare.models.retrieve(MODEL_ID)).toMatchObject({ id: MODEL_ID });
      expect((await bare.chat.completions.create({ model: MODEL_ID, messages: ask, max_tokens: 2 })).object).toBe("chat.completion");
      expect((await bare.completions.create({ model: MODEL_ID, prompt: "Red,", max_tokens: 2 })).object).toBe("text_completion");
      expect((await bare.responses.create({ model: MODEL_ID, input: "Hi", max_output_tokens: 2 })).object).toBe("response");
    });

    it("routes a doubled slash like the plain path", async () => {
      const response = await server.fetch(`${server.url}/v1//chat/completions`, {
        method: "POST",
        headers,
        body: JSON.stringify({ model: MODEL_ID, messages: ask, max_tokens: 2 }),
      });
      expect(response.status).toBe(200);
      expect((await response.json()).object).toBe("chat.completion");
    });
  });
});
