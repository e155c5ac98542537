/**
 * Server-sent events framing shared by the surfaces: format one event, and stream pre-formatted frames as a response
 * that is flushed per event (never compressed), keeps idle connections alive, and stops the producer when the client
 * goes away.
 */
import type { ServerResponse } from "node:http";

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
}

/**
 * Where a stream's frames go: a web stream's controller, or a Node response. Neither holds the producer back for a
 * slow client: the frames queue in memory (at most a reply's worth) and the generation, and the slot it holds, never
 * wait for a client's reading.
 */
interface FrameSink {
  write(text: string): void;
  end(): void;
}

/**
 * A 200 `text/event-stream` response of `frames` (already formatted SSE text). Read in-process, its body is a web
 * stream; a Node server hands it its `ServerResponse` instead (`writeTo`), and each frame is written to the socket
 * as it is made: through web streams a frame took several promise hops and, on the path to Node's socket, two
 * streams' worth of them, host work paid on every token of every stream. When the client goes, the frame iterator
 * is closed (`return()`), which runs the producer's `finally` and frees the engine slot.
 */
export class SseResponse extends Response {
  private readonly iterator: AsyncIterator<string>;
  private readonly closeListeners: Array<(clientLeft: boolean) => void> = [];
  private sink: FrameSink | undefined;
  private timer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(frames: AsyncIterable<string>, private readonly options: SseResponseOptions) {
    const encoder = new TextEncoder();
    let self: SseResponse | undefined;
    // Nothing runs until the body is read: a Node server never reads it.
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        self?.start({
          write: (text) => controller.enqueue(encoder.encode(text)),
          end: () => controller.close(),
        });
      },
      cancel: () => self?.cancel(),
    }, { highWaterMark: 0 });
    super(body, { status: 200, headers: { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache", "x-accel-buffering": "no" } });
    self = this;
    this.iterator = frames[Symbol.asyncIterator]();
  }

  /** Calls `listener(clientLeft)` once the stream ended: after its last frame, or after the client went and the producer stopped. */
  onClose(listener: (clientLeft: boolean) => void): void {
    this.closeListeners.push(listener);
  }

  /** Sends the status, the headers at once (a client sees the 200 before the first token), then every frame to `res`. */
  writeTo(res: ServerResponse): void {
    const headers: Array<[string, string]> = [];
    this.headers.forEach((value, name) => headers.push([name, value]));
    res.writeHead(this.status, headers.flat());
    res.flushHeaders();
    res.once("close", () => {
      if (!res.writableFinished) void this.cancel();
    });
    res.on("error", () => void this.cancel());
    this.start({
      write: (text) => void res.write(text),
      end: () => res.end(),
    });
  }

  /** Pumps the frames to the first sink that asks (later ones are ignored). */
  private start(sink: FrameSink): void {
    if (this.sink || this.closed) return;
    this.sink = sink;
    let lastWrite = Date.now();
    const write = (text: string) => {
      lastWrite = Date.now();
      sink.write(text);
    };
    const interval = this.options.keepAliveMs ?? 10_000;
    const keepAlive = this.options.keepAlive;
    this.timer = setInterval(() => {
      if (!this.closed && Date.now() - lastWrite >= interval) write(typeof keepAlive === "string" ? keepAlive : keepAlive());
    }, Math.max(50, Math.floor(interval / 2)));
    this.timer.unref();
    void pump(this.iterator, write, () => this.closed).then(() => {
      if (this.closed) return;
      sink.end();
      this.finish();
    });
  }

  /** The client went: the producer stops first (it reads its generation's usage on the way out), then the listeners hear. */
  private async cancel(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.timer);
    await this.iterator.return?.().catch(() => undefined);
    this.notify(true);
  }

  /** The last frame is out. */
  private finish(): void {
    this.closed = true;
    clearInterval(this.timer);
    this.notify(false);
  }

  private notify(clientLeft: boolean): void {
    for (const listener of this.closeListeners.splice(0)) listener(clientLeft);
  }
}

/** Streams `frames` as a 200 `text/event-stream` response ({@link SseResponse}). */
export function createSseResponse(frames: AsyncIterable<string>, options: SseResponseOptions): SseResponse {
  return new SseResponse(frames, options);
}

// A producer that throws ends the stream: surfaces run their frames through the stream guard (stream-guard.ts) first.
async function pump(iterator: AsyncIterator<string>, write: (text: string) => void, stopped: () => boolean): Promise<void> {
  try {
    for (;;) {
      const next = await iterator.next();
      if (next.done || stopped()) return;
      if (next.value) write(next.value);
    }
  } catch {
    return;
  }
}
