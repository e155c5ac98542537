/** Golden files for the pure legacy-completions encoders, checked by the completion stream checker. */
import { describe, expect, it } from "vitest";
import { collectResult, checkEventSequence } from "../../src/engine/index.js";
import { fromCompletionRequest } from "../../src/server/openai/completions/request.js";
import { toTextCompletion } from "../../src/server/openai/completions/response.js";
import { encodeCompletionStream } from "../../src/server/openai/completions/stream.js";
import { golden, joinText, listCases, readEvents, readJson, replay } from "../helpers/golden.js";
import { checkCompletionStream } from "../helpers/openai-stream.js";

describe.each(listCases("openai", "completion-"))("completion golden %s", (name) => {
  const call = fromCompletionRequest(readJson("openai", name, "request.json"));
  const events = readEvents("openai", name);
  const options = {
    id: "cmpl-0001", created: 1760000000, model: call.requests[0]!.model,
    logprobs: call.requests[0]!.logprobs !== undefined, includeUsage: call.includeUsage, perPrompt: call.n,
  };

  it("has a well-formed event sequence", () => {
    expect(checkEventSequence(events)).toEqual([]);
  });

  it("encodes the exact chunk stream, which the checker accepts", async () => {
    const sse = await joinText(encodeCompletionStream([() => replay(events)], options));
    expect(sse).toBe(golden("openai", name, "stream.sse", sse));
    expect(checkCompletionStream(sse, { includeUsage: call.includeUsage })).toEqual([]);
  });

  it("builds the non-streaming text_completion", async () => {
    const json = `${JSON.stringify(toTextCompletion([await collectResult(replay(events))], options), null, 2)}\n`;
    expect(json).toBe(golden("openai", name, "response.json", json));
  });
});
