/**
 * Server-sent events framing shared by the surfaces: format one event, and stream pre-formatted frames as a web
 * Response that is flushed per event (never compressed), keeps idle connections alive, and stops the producer
 * when the client goes away.
 */

/** `event: <name>` (when named) + one `data:` line of JSON + a blank line. */
export function formatSseEvent(name: string | undefined, data: unknown): string {
  const head = name ? `event: ${name}\n` : "";
  return `${head}data: ${typeof data === "string" ? data : JSON.stringify(data)}\n\n`;
}

/** A comment line; SSE parsers ignore it, proxies see traffic. */
export function formatSseComment(text: string): string {
  return `: ${text}\n\n`;
}

/** Options of {@link createSseResponse}. */
export interface SseResponseOptions {
  /**
   * Text written when nothing was sent for `keepAliveMs` (Anthropic: a `ping` event; OpenAI: a comment, or for chat
   * completions an empty delta), or the function that makes it at that moment.
   */
  keepAlive: string | (() => string);
  /** Idle interval before a keep-alive, default 10 s. */
  keepAliveMs?: number;
  /** Extra response headers. */
  headers?: Record<string, string>;
  /** Called once when the stream ends for any reason (finished, failed or cancelled). */
  onClose?(cancelled: boolean): void;
}

/**
 * Streams `frames` (already formatted SSE text) as a 200 `text/event-stream` response. Each frame is enqueued
 * as its own chunk, so the HTTP layer writes it at once. When the client disconnects, the frame iterator is
 * closed (`return()`), which runs the producer's `finally` and frees the engine slot.
 */
export function createSseResponse(frames: AsyncIterable<string>, options: SseResponseOptions): Response {
  const encoder = new TextEncoder();
  const iterator = frames[Symbol.asyncIterator]();
  let timer: NodeJS.Timeout | undefined;
  let closed = false;
  const finish = (cancelled: boolean) => {
    if (closed) return;
    closed = true;
    clearInterval(timer);
    options.onClose?.(cancelled);
  };
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      let lastWrite = Date.now();
      const write = (text: string) => {
        lastWrite = Date.now();
        controller.enqueue(encoder.encode(text));
      };
      const interval = options.keepAliveMs ?? 10_000;
      timer = setInterval(() => {
        if (!closed && Date.now() - lastWrite >= interval) write(typeof options.keepAlive === "string" ? options.keepAlive : options.keepAlive());
      }, Math.max(50, Math.floor(interval / 2)));
      timer.unref();
      void pump(iterator, write).then(() => {
        if (closed) return;
        finish(false);
        controller.close();
      });
    },
    async cancel() {
      finish(true);
      await iterator.return?.();
    },
  });
  const headers = {
    "content-type": "text/event-stream; charset=utf-8",
    "cache-control": "no-cache",
    "x-accel-buffering": "no",
    ...options.headers,
  };
  return new Response(body, { status: 200, headers });
}

// A producer that throws ends the stream: surfaces run their frames through the stream guard (stream-guard.ts) first.
async function pump(iterator: AsyncIterator<string>, write: (text: string) => void): Promise<void> {
  try {
    for (;;) {
      const next = await iterator.next();
      if (next.done) return;
      if (next.value) write(next.value);
    }
  } catch {
    return;
  }
}
