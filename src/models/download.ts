/**
 * A resumable HTTP(S) download into a `.partial` file: it continues from the partial's size with a Range request,
 * starts over when the server answers 200 (or a range it was not asked for), retries a lost connection from
 * where it stopped, and hashes every byte of the file, the kept ones included.
 */
import { createHash, type Hash } from "node:crypto";
import { createReadStream } from "node:fs";
import { open, stat, truncate } from "node:fs/promises";
import http, { type IncomingMessage } from "node:http";
import https from "node:https";
import { PullError, type FetchProgress } from "./pull-progress.js";

/** Options of a download. */
export interface DownloadOptions {
  signal?: AbortSignal;
  /** Extra trusted certificate authorities (PEM), replacing the defaults; tests use a self-signed server. */
  ca?: string | Buffer;
  /** How long a server may take to answer a request (default 15 s), so an unreachable host fails fast. */
  answerTimeoutMs?: number;
}

const MAX_REDIRECTS = 8;
/** Consecutive attempts that add no byte before giving up. */
const MAX_BARREN_ATTEMPTS = 3;
const IDLE_TIMEOUT_MS = 60_000;
const ANSWER_TIMEOUT_MS = 15_000;

/** Downloads `url` into `partial`, yielding progress; returns the hex SHA-256 of the whole file. */
export async function* downloadFile(url: string, partial: string, options: DownloadOptions = {}): AsyncGenerator<FetchProgress, string> {
  let { hash, size } = await hashExisting(partial);
  for (let barren = 0; ; ) {
    const response = await get(url, size > 0 ? { Range: `bytes=${size}-` } : {}, options);
    const accepted = acceptResponse(response, size, url);
    if (accepted !== "resumed" && size > 0) {
      await truncate(partial, 0);
      ({ hash, size } = { hash: createHash("sha256"), size: 0 });
    }
    if (accepted === "retry") continue;
    const total = totalOf(response);
    yield { phase: "download", receivedBytes: size, totalBytes: total, ...(size > 0 ? { resumedFrom: size } : {}) };
    const before = size;
    try {
      for await (const received of appendBody(response, partial, hash)) {
        size = before + received;
        yield { phase: "download", receivedBytes: size, totalBytes: total };
      }
      if (total === null || size >= total) return hash.digest("hex");
      throw new Error("the connection closed early");
    } catch (error) {
      options.signal?.throwIfAborted();
      // A failing disk write is not a lost connection: retrying would not help.
      if ((error as NodeJS.ErrnoException).syscall === "write") throw error;
      barren = size > before ? 0 : barren + 1;
      const why = error instanceof Error ? error.message : String(error);
      if (barren >= MAX_BARREN_ATTEMPTS) {
        throw new PullError(`download of ${url} interrupted at ${size} bytes (${why}); run the same pull again to resume`);
      }
      yield { phase: "download", receivedBytes: size, totalBytes: total, message: `connection lost (${why}); resuming at ${size} bytes` };
    }
  }
}

/**
 * Checks the status: "resumed" when the body continues the partial, "fresh" when it is the whole file (a 200,
 * also the answer of servers that ignore ranges), "retry" when the partial must be dropped and asked for again.
 */
function acceptResponse(response: IncomingMessage, size: number, url: string): "resumed" | "fresh" | "retry" {
  const status = response.statusCode ?? 0;
  if (status === 200) return "fresh";
  const start = /^bytes (\d+)-/.exec(response.headers["content-range"] ?? "")?.[1];
  if (status === 206 && size > 0 && Number(start) === size) return "resumed";
  response.resume();
  // A range that does not start where the partial ends, or 416: the partial does not match the file.
  if (size > 0 && (status === 206 || status === 416)) return "retry";
  throw new PullError(`download of ${url} failed: HTTP ${status} ${response.statusMessage ?? ""}`.trim());
}

/** The full file size: from Content-Range on a 206, Content-Length on a 200; null when unknown. */
function totalOf(response: IncomingMessage): number | null {
  const total = response.statusCode === 206
    ? /\/(\d+)$/.exec(response.headers["content-range"] ?? "")?.[1]
    : response.headers["content-length"];
  return total === undefined ? null : Number(total);
}

/** Appends the body to the partial, hashing as it goes; yields the bytes written so far. */
async function* appendBody(response: IncomingMessage, partial: string, hash: Hash): AsyncGenerator<number> {
  const file = await open(partial, "a");
  let written = 0;
  try {
    for await (const chunk of response as AsyncIterable<Buffer>) {
      await file.write(chunk);
      hash.update(chunk);
      written += chunk.length;
      yield written;
    }
  } finally {
    response.destroy();
    await file.close();
  }
}

/** Hashes what an earlier pull left in the partial, so the final digest covers the whole file. */
async function hashExisting(partial: string): Promise<{ hash: Hash; size: number }> {
  const hash = createHash("sha256");
  const info = await stat(partial).catch(() => undefined);
  if (!info) return { hash, size: 0 };
  let size = 0;
  for await (const chunk of createReadStream(partial) as AsyncIterable<Buffer>) {
    hash.update(chunk);
    size += chunk.length;
  }
  return { hash, size };
}

/** A GET that follows redirects and gives up on a host that does not answer or a silent connection. */
function get(url: string, headers: Record<string, string>, options: DownloadOptions, redirects = MAX_REDIRECTS): Promise<IncomingMessage> {
  const secure = url.startsWith("https:");
  const requestOptions = { headers: { "user-agent": "kiln", ...headers }, signal: options.signal, ...(secure && options.ca ? { ca: options.ca } : {}) };
  const answerMs = options.answerTimeoutMs ?? ANSWER_TIMEOUT_MS;
  return new Promise((resolve, reject) => {
    const request = (secure ? https : http).get(url, requestOptions, (response) => {
      clearTimeout(unanswered);
      const location = response.headers.location;
      if (location && [301, 302, 303, 307, 308].includes(response.statusCode ?? 0)) {
        response.resume();
        if (redirects === 0) return reject(new PullError(`download of ${url} failed: too many redirects`));
        return resolve(get(new URL(location, url).href, headers, options, redirects - 1));
      }
      resolve(response);
    });
    const unanswered = setTimeout(() => request.destroy(new Error(`no answer in ${answerMs / 1000} s`)), answerMs);
    request.on("close", () => clearTimeout(unanswered));
    request.setTimeout(IDLE_TIMEOUT_MS, () => request.destroy(new Error(`no data for ${IDLE_TIMEOUT_MS / 1000} s`)));
    request.on("error", (error) => reject(options.signal?.aborted ? options.signal.reason : new PullError(`download of ${url} failed: ${error.message}`)));
  });
}
