import { describe, expect, it } from "vitest";
import { parseSseText, readSse } from "./read-sse.js";

/** A body delivering `text` in pieces of `size` bytes, as a network may. */
function bodyOf(text: string, size: number): ReadableStream<Uint8Array> {
  const bytes = new TextEncoder().encode(text);
  return new ReadableStream({
    start(controller) {
      for (let i = 0; i < bytes.length; i += size) controller.enqueue(bytes.slice(i, i + size));
      controller.close();
    },
  });
}

async function collect(body: ReadableStream<Uint8Array>) {
  const events = [];
  for await (const event of readSse(body)) events.push(event);
  return events;
}

const TEXT = ': comment\r\nevent: message_start\r\ndata: {"a":1}\r\n\r\nid: 7\ndata: line one\ndata:line two\n\nevent: ping\n\ndata: é€\rdata: [DONE]';

describe("the SSE reader", () => {
  const expected = [
    { event: "message_start", data: '{"a":1}' },
    { data: "line one\nline two" },
    { event: "ping", data: "" },
    { data: "é€\n[DONE]" },
  ];

  it("parses names, joined data lines, all three line endings and a last event without a blank line", () => {
    expect(parseSseText(TEXT)).toEqual(expected);
  });

  it("reads the same events whatever the chunk boundaries (split \\r\\n, split UTF-8)", async () => {
    for (const size of [1, 2, 3, 5, 64]) expect(await collect(bodyOf(TEXT, size))).toEqual(expected);
  });
});
