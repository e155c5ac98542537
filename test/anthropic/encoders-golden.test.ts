/**
 * Golden files of the pure encoders: test/fixtures/anthropic/<case>/events.jsonl (engine events) → stream.sse
 * (exact SSE text) and response.json (non-streaming body, absent when the events end in an error).
 */
import { describe, expect, it } from "vitest";
import { collectResult, EngineError, checkEventSequence } from "../../src/engine/index.js";
import { sequentialIds } from "../../src/lib/ids.js";
import { checkAnthropicStream, parseSse } from "../helpers/sse.js";
import { golden, hasFile, listCases, readEvents, readText, replay } from "../helpers/golden.js";
import { encodeMessagesStream } from "../../src/server/anthropic/stream.js";
import { toMessage } from "../../src/server/anthropic/response.js";
import { salvageArguments } from "../../src/engine/text/tool-call-json.js";

describe.each(listCases("anthropic"))("golden case %s", (name) => {
  const events = readEvents("anthropic", name);

  it("has a well-formed event sequence", () => {
    expect(checkEventSequence(events)).toEqual([]);
  });

  it("encodes the stream exactly", () => {
    const ids = sequentialIds();
    const text = encodeMessagesStream(events, { messageId: ids("msg_"), model: "my-model" });
    expect(text).toBe(golden("anthropic", name, "stream.sse", text));
    expect(checkAnthropicStream(text)).toEqual([]);
  });

  it("folds to the response body whose content equals the concatenated deltas", async () => {
    if (!hasFile("anthropic", name, "response.json")) {
      await expect(collectResult(replay(events))).rejects.toBeInstanceOf(EngineError);
      return;
    }
    const ids = sequentialIds();
    const message = toMessage(await collectResult(replay(events)), { id: ids("msg_"), model: "my-model" });
    const json = `${JSON.stringify(message, null, 2)}\n`;
    expect(json).toBe(golden("anthropic", name, "response.json", json));
    const streamed = parseSse(readText("anthropic", name, "stream.sse")).map((e) => e.json);
    message.content.forEach((block, index) => {
      const deltas = streamed.filter((e) => e.type === "content_block_delta" && e.index === index).map((e) => e.delta);
      if (block.type === "text") expect(deltas.map((d) => d.text).join("")).toBe(block.text);
      // A call cut off by max_tokens streams its arguments as far as they were written; the body holds them salvaged.
      const json = deltas.map((d) => d.partial_json).join("");
      if (block.type === "tool_use") expect(message.stop_reason === "max_tokens" ? salvageArguments(json) : JSON.parse(json)).toEqual(block.input);
      if (block.type === "thinking") expect(deltas.filter((d) => d.type === "thinking_delta").map((d) => d.thinking).join("")).toBe(block.thinking);
    });
  });
});
