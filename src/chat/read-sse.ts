/** Reads a `text/event-stream` body into events (https://html.spec.whatwg.org/multipage/server-sent-events.html). */

/** One server-sent event: its `event:` name ("message" when absent) and its joined `data:` lines. */
export interface SseEvent {
  event: string;
  data: string;
}

/** Yields each event of an SSE body as it arrives; comments and retry/id fields are skipped. */
export async function* readSse(body: ReadableStream<Uint8Array>): AsyncGenerator<SseEvent> {
  const decoder = new TextDecoder();
  let buffer = "";
  let event = "";
  let data: string[] = [];
  const reader = body.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      buffer += done ? decoder.decode() : decoder.decode(value, { stream: true });
      const lines = buffer.split(/\r\n|\r|\n/);
      // The last piece may be a partial line, unless the stream is over.
      buffer = done ? "" : lines.pop()!;
      for (const line of lines) {
        if (line === "") {
          if (data.length > 0) yield { event: event || "message", data: data.join("\n") };
          event = "";
          data = [];
        } else if (line.startsWith("data:")) {
          data.push(stripSpace(line.slice(5)));
        } else if (line.startsWith("event:")) {
          event = stripSpace(line.slice(6));
        }
      }
      if (done) break;
    }
    if (data.length > 0) yield { event: event || "message", data: data.join("\n") };
  } finally {
    reader.releaseLock();
  }
}

function stripSpace(value: string): string {
  return value.startsWith(" ") ? value.slice(1) : value;
}
