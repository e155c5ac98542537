/** Golden files for the pure chat encoders: events.jsonl → stream.sse and response.json, checked by the stream checker. */
import { describe, expect, it } from "vitest";
import { collectResult, checkEventSequence } from "../../src/engine/index.js";
import { toOpenAIError } from "../../src/server/openai/wire/errors.js";
import { fromChatCompletionRequest } from "../../src/server/openai/chat/request.js";
import { toChatCompletion } from "../../src/server/openai/chat/response.js";
import { encodeChatCompletionStream } from "../../src/server/openai/chat/stream.js";
import { golden, joinText, listCases, readEvents, readJson, replay } from "../helpers/golden.js";
import { checkChatCompletionStream } from "../helpers/openai-stream.js";

const META = { id: "chatcmpl-0001", created: 1760000000 };

describe.each(listCases("openai", "chat-"))("chat golden %s", (name) => {
  const call = fromChatCompletionRequest(readJson("openai", name, "request.json"));
  const events = readEvents("openai", name);
  const options = { ...META, model: call.request.model, includeUsage: call.includeUsage, logprobs: call.request.logprobs !== undefined };

  it("has a well-formed event sequence", () => {
    expect(checkEventSequence(events)).toEqual([]);
  });

  it("encodes the exact chunk stream, which the checker accepts", async () => {
    const sse = await joinText(encodeChatCompletionStream([() => replay(events)], options));
    expect(sse).toBe(golden("openai", name, "stream.sse", sse));
    expect(checkChatCompletionStream(sse, { includeUsage: call.includeUsage })).toEqual([]);
  });

  it("builds the non-streaming response (or the error body)", async () => {
    const body = await collectResult(replay(events)).then(
      (result) => toChatCompletion([result], options),
      (error) => toOpenAIError(error),
    );
    const json = `${JSON.stringify(body, null, 2)}\n`;
    expect(json).toBe(golden("openai", name, "response.json", json));
  });
});
