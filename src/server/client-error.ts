/**
 * Answers requests that Node's HTTP parser rejects before any handler runs: headers over `maxHeaderSize` (431) and
 * malformed requests (400). Node's own answer has no body or resets the connection; this one is a complete
 * response in the caller's error shape, read from the part of the request the parser saw.
 */
import { STATUS_CODES } from "node:http";
import type { Duplex } from "node:stream";
import { EngineError } from "../engine/index.js";

/** Node's maxHeaderSize default, stated here so the README and the 431 message name the same limit. */
export const MAX_HEADER_BYTES = 16 * 1024;

/** How long a rejected connection may keep sending (the rest of its headers) before it is cut. */
const LINGER_MS = 5_000;

/** What is known of a request the parser rejected: its path and the header names it got to. */
export interface RejectedRequest {
  path: string;
  hasHeader(name: string): boolean;
}

/** Renders an error for a rejected request (app.ts picks the surface). */
export type RenderRejection = (error: EngineError, request: RejectedRequest) => Response;

/** The `clientError` listener of a Node HTTP server. */
export function createClientErrorHandler(render: RenderRejection) {
  return (error: Error & { code?: string; rawPacket?: Buffer }, socket: Duplex): void => {
    // As Node's own handler: never write into a response already under way on this connection (a pipelined request).
    const busy = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage?.headersSent === true;
    if (error.code === "ECONNRESET" || !socket.writable || busy) {
      socket.destroy();
      return;
    }
    const engineError = error.code === "HPE_HEADER_OVERFLOW"
      ? new EngineError("headers_too_large", `request headers exceed ${MAX_HEADER_BYTES} bytes`)
      : new EngineError("invalid_request", `malformed HTTP request (${error.code ?? error.message})`);
    const response = render(engineError, readRejected(error.rawPacket));
    void response.text().then((body) => {
      socket.end(serialize(response, body));
      // Reading on until the client stops sending lets it see the answer instead of a reset.
      socket.resume();
      setTimeout(() => socket.destroy(), LINGER_MS).unref();
    }, () => socket.destroy());
  };
}

/** The request line's path and the header names found in what the parser had read. */
export function readRejected(raw: Buffer | undefined): RejectedRequest {
  const text = raw?.toString("latin1") ?? "";
  const [requestLine = "", ...lines] = text.split("\r\n");
  const path = requestLine.split(" ")[1] ?? "/";
  const names = new Set(lines.filter((line) => line.includes(":")).map((line) => line.slice(0, line.indexOf(":")).trim().toLowerCase()));
  return { path, hasHeader: (name) => names.has(name) };
}

function serialize(response: Response, body: string): string {
  const head = [`HTTP/1.1 ${response.status} ${STATUS_CODES[response.status] ?? ""}`];
  response.headers.forEach((value, name) => head.push(`${name}: ${value}`));
  head.push(`content-length: ${Buffer.byteLength(body)}`, "connection: close");
  return `${head.join("\r\n")}\r\n\r\n${body}`;
}
