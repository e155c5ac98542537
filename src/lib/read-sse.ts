/**
 * The one server-sent-events reader (https://html.spec.whatwg.org/multipage/server-sent-events.html) behind every
 * client in kiln: the remote backend, `kiln chat --url`, and the tests' stream checkers. Text is fed as it
 * arrives; each blank line completes an event.
 */

/** One event: its `event:` name (absent when the server sent none) and its `data:` lines joined by \n. */
export interface SseEvent {
  event?: string;
  data: string;
}

/** Feeds SSE text in pieces of any size; `end` flushes an event the text ended without a blank line after. */
export interface SseParser {
  push(text: string): SseEvent[];
  end(): SseEvent[];
}

/**
 * Comments, `id:` and `retry:` are skipped. An event with a name but no data is kept (data ""), so a checker can
 * see it; clients that want payloads skip empty data.
 */
export function createSseParser(): SseParser {
  let buffer = "";
  let event: string | undefined;
  let data: string[] | undefined;
  const flush = (into: SseEvent[]) => {
    if (event !== undefined || data !== undefined) into.push({ ...(event !== undefined ? { event } : {}), data: (data ?? []).join("\n") });
    event = undefined;
    data = undefined;
  };
  const readLines = (lines: string[]): SseEvent[] => {
    const events: SseEvent[] = [];
    for (const line of lines) {
      if (line === "") flush(events);
      else if (!line.startsWith(":")) {
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
        if (field === "event") event = value;
        if (field === "data") (data ??= []).push(value);
      }
    }
    return events;
  };
  return {
    push(text) {
      const lines = (buffer + text).split(/\r\n|\n|\r(?!$)/);
      // The last piece may be a partial line (or a \r whose \n is still on its way).
      buffer = lines.pop()!;
      return readLines(lines);
    },
    end() {
      const events = readLines(buffer === "" ? [] : [buffer.replace(/\r$/, "")]);
      buffer = "";
      flush(events);
      return events;
    },
  };
}

/** Parses a whole SSE text. */
export function parseSseText(text: string): SseEvent[] {
  const parser = createSseParser();
  return [...parser.push(text), ...parser.end()];
}

/** Yields each event of an SSE body as it arrives. */
export async function* readSse(body: ReadableStream<Uint8Array>): AsyncGenerator<SseEvent> {
  const decoder = new TextDecoder();
  const parser = createSseParser();
  for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) yield* parser.push(decoder.decode(chunk, { stream: true }));
  yield* parser.push(decoder.decode());
  yield* parser.end();
}
