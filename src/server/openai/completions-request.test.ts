import { describe, expect, it } from "vitest";
import { EngineError } from "../../engine/errors.js";
import { DEFAULT_COMPLETION_MAX_TOKENS, fromCompletionRequest } from "./completions-request.js";

describe("fromCompletionRequest", () => {
  it("passes the prompt verbatim and defaults max_tokens to 16", () => {
    const call = fromCompletionRequest({ model: "m", prompt: "<|fim_prefix|>a<|fim_suffix|>b<|fim_middle|>", stop: ["\n\n", "a", "b", "c", "d", "e", "f", "g", "h"] });
    expect(call.request).toMatchObject({ prompt: "<|fim_prefix|>a<|fim_suffix|>b<|fim_middle|>", maxTokens: DEFAULT_COMPLETION_MAX_TOKENS });
    expect(call.request.stop).toHaveLength(9);
    expect(call).toMatchObject({ stream: false, echo: false, includeUsage: false });
  });

  it("accepts an array of one prompt, suffix, echo and logprobs", () => {
    const call = fromCompletionRequest({ model: "m", prompt: ["def f("], suffix: "):", echo: true, logprobs: 2, max_tokens: 5, stream: true });
    expect(call.request).toMatchObject({ prompt: "def f(", suffix: "):", logprobs: 2, maxTokens: 5 });
    expect(call).toMatchObject({ echo: true, stream: true });
  });

  it.each([
    [{ prompt: ["a", "b"] }, "prompt"],
    [{ prompt: [1, 2, 3] }, "prompt"],
    [{ prompt: "x", logprobs: 6 }, "logprobs"],
    [{ prompt: "x", temperature: -1 }, "temperature"],
  ])("rejects %j with param %s", (fields, param) => {
    let error: unknown;
    try { fromCompletionRequest({ model: "m", ...fields }); } catch (caught) { error = caught; }
    expect(error).toBeInstanceOf(EngineError);
    expect((error as EngineError).details.param).toBe(param);
  });
});
