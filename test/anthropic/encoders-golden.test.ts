/**
 * Golden files of the pure encoders: test/fixtures/anthropic/<case>/events.jsonl (engine events) → stream.sse
 * (exact SSE text) and response.json (non-streaming body, absent when the events end in an error).
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { collectResult } from "../../src/engine/collect.js";
import { EngineError } from "../../src/engine/errors.js";
import type { GenerationEvent } from "../../src/engine/events.js";
import { checkEventSequence } from "../../src/engine/event-invariants.js";
import { sequentialIds } from "../../src/lib/ids.js";
import { checkAnthropicStream, parseSse } from "../helpers/sse.js";
import { encodeMessagesStream } from "../../src/server/anthropic/stream.js";
import { toMessage } from "../../src/server/anthropic/response.js";

const root = join(import.meta.dirname, "../fixtures/anthropic");

function readEvents(dir: string): GenerationEvent[] {
  return readFileSync(join(dir, "events.jsonl"), "utf8").trim().split("\n").map((line) => {
    const event = JSON.parse(line);
    return event.type === "error" ? { type: "error", error: new EngineError(event.error.code, event.error.message) } : event;
  });
}

async function* replay(events: GenerationEvent[]): AsyncIterable<GenerationEvent> {
  yield* events;
}

describe.each(readdirSync(root))("golden case %s", (name) => {
  const dir = join(root, name);
  const events = readEvents(dir);

  it("has a well-formed event sequence", () => {
    expect(checkEventSequence(events)).toEqual([]);
  });

  it("encodes the stream exactly", () => {
    const ids = sequentialIds();
    const text = encodeMessagesStream(events, { messageId: ids("msg_"), model: "my-model" });
    expect(text).toBe(readFileSync(join(dir, "stream.sse"), "utf8"));
    expect(checkAnthropicStream(text)).toEqual([]);
  });

  it("folds to the response body whose content equals the concatenated deltas", async () => {
    const expected = join(dir, "response.json");
    if (!existsSync(expected)) {
      await expect(collectResult(replay(events))).rejects.toBeInstanceOf(EngineError);
      return;
    }
    const ids = sequentialIds();
    const message = toMessage(await collectResult(replay(events)), { id: ids("msg_"), model: "my-model" });
    expect(message).toEqual(JSON.parse(readFileSync(expected, "utf8")));
    const streamed = parseSse(readFileSync(join(dir, "stream.sse"), "utf8")).map((e) => e.json);
    message.content.forEach((block, index) => {
      const deltas = streamed.filter((e) => e.type === "content_block_delta" && e.index === index).map((e) => e.delta);
      if (block.type === "text") expect(deltas.map((d) => d.text).join("")).toBe(block.text);
      if (block.type === "tool_use") expect(JSON.parse(deltas.map((d) => d.partial_json).join(""))).toEqual(block.input);
      if (block.type === "thinking") expect(deltas.filter((d) => d.type === "thinking_delta").map((d) => d.thinking).join("")).toBe(block.thinking);
    });
  });
});
