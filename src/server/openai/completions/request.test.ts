import { describe, expect, it } from "vitest";
import { EngineError } from "../../../engine/index.js";
import { DEFAULT_COMPLETION_MAX_TOKENS, fromCompletionRequest } from "./request.js";

describe("fromCompletionRequest", () => {
  it("passes the prompt verbatim and defaults max_tokens to 16", () => {
    const call = fromCompletionRequest({ model: "m", prompt: "<|fim_prefix|>a<|fim_suffix|>b<|fim_middle|>", stop: ["\n\n", "a", "b", "c", "d", "e", "f", "g", "h"] });
    expect(call.requests).toHaveLength(1);
    expect(call.requests[0]).toMatchObject({ prompt: "<|fim_prefix|>a<|fim_suffix|>b<|fim_middle|>", maxTokens: DEFAULT_COMPLETION_MAX_TOKENS });
    expect(call.requests[0]!.stop).toHaveLength(9);
    expect(call.requests[0]!.echo).toBeUndefined();
    expect(call).toMatchObject({ stream: false, includeUsage: false, n: 1 });
  });

  it("accepts an array of one prompt, suffix, echo and logprobs", () => {
    const call = fromCompletionRequest({ model: "m", prompt: ["def f("], suffix: "):", echo: true, logprobs: 2, max_tokens: 5, stream: true });
    expect(call.requests).toEqual([expect.objectContaining({ prompt: "def f(", suffix: "):", logprobs: 2, maxTokens: 5, echo: true })]);
    expect(call).toMatchObject({ stream: true });
  });

  it("takes token-id prompts and lists of prompts, one request each, in order", () => {
    expect(fromCompletionRequest({ model: "m", prompt: [1, 2, 3] }).requests.map((r) => r.prompt)).toEqual([[1, 2, 3]]);
    expect(fromCompletionRequest({ model: "m", prompt: [[1, 2], [3]], n: 2 }).requests.map((r) => r.prompt)).toEqual([[1, 2], [3]]);
    expect(fromCompletionRequest({ model: "m", prompt: ["a", "b"], logprobs: 0 }).requests).toEqual([
      expect.objectContaining({ prompt: "a", logprobs: 0 }),
      expect.objectContaining({ prompt: "b", logprobs: 0 }),
    ]);
  });

  it.each([
    [{ prompt: [] }, "prompt"],
    [{ prompt: [[]] }, "prompt.0"],
    [{ prompt: [1.5] }, "prompt.0"],
    [{ prompt: "x", n: 17 }, "n"],
    [{ prompt: "x", stream_options: { include_usage: true } }, "stream_options"],
    [{ prompt: "x", logprobs: 6 }, "logprobs"],
    [{ prompt: "x", temperature: -1 }, "temperature"],
  ])("rejects %j with param %s", (fields, param) => {
    let error: unknown;
    try { fromCompletionRequest({ model: "m", ...fields }); } catch (caught) { error = caught; }
    expect(error).toBeInstanceOf(EngineError);
    expect((error as EngineError).details.param).toBe(param);
  });
});
