/** Golden files for the pure Responses API encoder, checked by the responses stream checker. */
import { describe, expect, it } from "vitest";
import { checkEventSequence } from "../../src/engine/index.js";
import { sequentialIds } from "../../src/lib/ids.js";
import { fromResponsesRequest } from "../../src/server/openai/responses/request.js";
import { collectResponse, encodeResponsesStream } from "../../src/server/openai/responses/stream.js";
import { toOpenAIError } from "../../src/server/openai/wire/errors.js";
import { golden, joinText, listCases, readEvents, readJson, replay } from "../helpers/golden.js";
import { checkResponsesStream } from "../helpers/openai-stream.js";

describe.each(listCases("openai", "responses-"))("responses golden %s", (name) => {
  const call = fromResponsesRequest(readJson("openai", name, "request.json"));
  const events = readEvents("openai", name);
  const meta = () => ({ id: "resp_0001", created: 1760000000, model: call.request.model, ids: sequentialIds() });

  it("has a well-formed event sequence", () => {
    expect(checkEventSequence(events)).toEqual([]);
  });

  it("encodes the exact event stream, which the checker accepts", async () => {
    const sse = await joinText(encodeResponsesStream(replay(events), meta()));
    expect(sse).toBe(golden("openai", name, "stream.sse", sse));
    expect(checkResponsesStream(sse)).toEqual([]);
  });

  it("folds the same events into the non-streaming response (or the error body)", async () => {
    const body = await collectResponse(replay(events), meta()).catch((error) => toOpenAIError(error));
    const json = `${JSON.stringify(body, null, 2)}\n`;
    expect(json).toBe(golden("openai", name, "response.json", json));
  });
});
