import { describe, expect, it } from "vitest";
import type { ResponseRecord } from "../server/context.js";
import { createRequestLogger, type RequestLoggerOptions } from "./request-logger.js";

const NOW = Date.parse("2026-11-22T03:04:05Z");
const RECORD: ResponseRecord = { requestId: "req_1", method: "POST", route: "/v1/messages", status: 200, keyId: "key_abc", model: "m", durationMs: 812.4, stream: true };
/** The record of a request that generated, as its observer completed it (bodies kept for --log-bodies). */
const GENERATED: ResponseRecord = {
  ...RECORD, model: "m-resolved", inputTokens: 30, cachedInputTokens: 8, outputTokens: 5, timeToFirstTokenMs: 119.6,
  prompt: { messages: ["secret prompt"] }, output: "secret output",
};

function capture(options: RequestLoggerOptions = {}) {
  const lines: string[] = [];
  const log = createRequestLogger({ pretty: false, clock: () => NOW, write: (line) => lines.push(line), ...options });
  return { lines, log };
}

describe("createRequestLogger", () => {
  it("writes one JSON line per request with ids, status, tokens and timings, and no bodies by default", () => {
    const { lines, log } = capture();
    log(GENERATED);
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toEqual({
      time: "2026-11-22T03:04:05.000Z", level: "info", msg: "request", requestId: "req_1", method: "POST", route: "/v1/messages",
      status: 200, keyId: "key_abc", model: "m-resolved", stream: true, durationMs: 812, timeToFirstTokenMs: 120,
      inputTokens: 30, cachedInputTokens: 8, outputTokens: 5,
    });
    expect(lines[0]).not.toContain("secret");
  });

  it("adds prompt and output only with logBodies", () => {
    const { lines, log } = capture({ logBodies: true });
    log(GENERATED);
    expect(JSON.parse(lines[0]!)).toMatchObject({ prompt: { messages: ["secret prompt"] }, output: "secret output" });
  });

  it("logs 4xx as warn and 5xx as error, and drops what is below the level", () => {
    const { lines, log } = capture({ level: "warn" });
    log(RECORD);
    log({ ...RECORD, status: 429 });
    log({ ...RECORD, status: 500 });
    expect(lines.map((line) => JSON.parse(line).level)).toEqual(["warn", "error"]);
    const silent = capture({ level: "silent" });
    silent.log({ ...RECORD, status: 500 });
    expect(silent.lines).toEqual([]);
  });

  it("logs a probe's 503 (a server still loading) as debug and an overloaded answer as warn", () => {
    const { lines, log } = capture({ level: "debug" });
    log({ ...RECORD, method: "GET", route: "/health", status: 503 });
    log({ ...RECORD, method: "GET", route: "/ready", status: 503 });
    log({ ...RECORD, route: "/v1/chat/completions", status: 503 });
    log({ ...RECORD, status: 529 });
    log({ ...RECORD, method: "GET", route: "/health", status: 500 });
    expect(lines.map((line) => JSON.parse(line).level)).toEqual(["debug", "debug", "warn", "warn", "error"]);
    const info = capture();
    info.log({ ...RECORD, method: "GET", route: "/health", status: 503 });
    expect(info.lines).toEqual([]);
  });

  it("writes a readable line on a terminal", () => {
    const { lines, log } = capture({ pretty: true });
    log(GENERATED);
    expect(lines[0]).toBe("03:04:05 INFO  POST /v1/messages 200 m-resolved 812ms ttft 120ms in 30 (cached 8) out 5 key key_abc req_1");
  });

  it("reports the tokens a draft model proposed and those kept, in both formats", () => {
    const drafted = { ...GENERATED, draft: { drafted: 12, accepted: 9 } };
    const json = capture();
    json.log(drafted);
    expect(JSON.parse(json.lines[0]!)).toMatchObject({ outputTokens: 5, draftTokens: 12, acceptedDraftTokens: 9 });
    const pretty = capture({ pretty: true });
    pretty.log(drafted);
    expect(pretty.lines[0]).toBe("03:04:05 INFO  POST /v1/messages 200 m-resolved 812ms ttft 120ms in 30 (cached 8) out 5 draft 9/12 accepted key key_abc req_1");
  });
});
