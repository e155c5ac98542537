import { describe, expect, it } from "vitest";
import { contextOverflow, EngineError } from "../../../engine/index.js";
import { openAIErrorResponse, toOpenAIError } from "./errors.js";

describe("toOpenAIError", () => {
  it("maps a wrong key to 401 invalid_api_key and a missing key to code null", () => {
    expect(toOpenAIError(new EngineError("authentication", "Incorrect API key provided."))).toMatchObject({
      status: 401, body: { error: { type: "invalid_request_error", param: null, code: "invalid_api_key" } },
    });
    expect(toOpenAIError(new EngineError("authentication", "No API key", { missing: true })).body.error.code).toBeNull();
  });

  it("words an unknown model as OpenAI does", () => {
    const { status, body } = toOpenAIError(new EngineError("not_found", "nope", { param: "model", model: "gpt-x" }));
    expect(status).toBe(404);
    expect(body.error).toEqual({ message: "The model `gpt-x` does not exist or you do not have access to it.", type: "invalid_request_error", param: "model", code: "model_not_found" });
  });

  it("maps context overflow to 400 context_length_exceeded on messages, without retries", () => {
    const { status, body, headers } = toOpenAIError(contextOverflow(9000, 4096));
    expect(status).toBe(400);
    expect(body.error).toMatchObject({ code: "context_length_exceeded", param: "messages", type: "invalid_request_error" });
    expect(body.error.message).toContain("maximum context length is 4096 tokens");
    expect(headers["x-should-retry"]).toBe("false");
  });

  it("gives rate limits a 429 with a parseable wait and overload a 503 with retry-after", () => {
    const limited = toOpenAIError(new EngineError("rate_limited", "Rate limit reached for requests", { retryAfter: 2.4 }));
    expect(limited.status).toBe(429);
    expect(limited.body.error.code).toBe("rate_limit_exceeded");
    expect(limited.body.error.message).toMatch(/Please try again in 3s\.$/);
    expect(limited.headers).toEqual({ "retry-after": "3" });
    const overloaded = toOpenAIError(new EngineError("overloaded", "The server is busy"));
    expect(overloaded.status).toBe(503);
    expect(overloaded.headers["retry-after"]).toMatch(/^\d+$/);
    expect(overloaded.headers["x-should-retry"]).toBeUndefined();
  });

  it("keeps the param of validation errors and renders a JSON response", async () => {
    const response = openAIErrorResponse(new EngineError("invalid_request", "Invalid 'temperature'", { param: "temperature" }), "req_1");
    expect(response.status).toBe(400);
    expect(response.headers.get("content-type")).toBe("application/json");
    expect(response.headers.get("x-request-id")).toBe("req_1");
    expect(await response.json()).toEqual({ error: { message: "Invalid 'temperature'", type: "invalid_request_error", param: "temperature", code: null } });
  });
});
