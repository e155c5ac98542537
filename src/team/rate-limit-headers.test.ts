import { describe, expect, it } from "vitest";
import { formatDuration, toRateLimitHeaders } from "./rate-limit-headers.js";

describe("toRateLimitHeaders", () => {
  it("writes both vendors' headers for each limit the key has", () => {
    const now = Date.parse("2026-11-22T03:04:05.250Z");
    const headers = toRateLimitHeaders(
      { requests: { limit: 10, remaining: 7, resetAt: now + 42_000 }, tokens: { limit: 1000, remaining: 0, resetAt: now + 500 } },
      now,
    );
    expect(headers).toEqual({
      "anthropic-ratelimit-requests-limit": "10",
      "anthropic-ratelimit-requests-remaining": "7",
      "anthropic-ratelimit-requests-reset": "2026-11-22T03:04:48Z",
      "x-ratelimit-limit-requests": "10",
      "x-ratelimit-remaining-requests": "7",
      "x-ratelimit-reset-requests": "42s",
      "anthropic-ratelimit-tokens-limit": "1000",
      "anthropic-ratelimit-tokens-remaining": "0",
      "anthropic-ratelimit-tokens-reset": "2026-11-22T03:04:06Z",
      "x-ratelimit-limit-tokens": "1000",
      "x-ratelimit-remaining-tokens": "0",
      "x-ratelimit-reset-tokens": "500ms",
    });
  });

  it("writes nothing for a key without limits", () => {
    expect(toRateLimitHeaders({}, 0)).toEqual({});
  });
});

describe("formatDuration", () => {
  it("writes waits as OpenAI does", () => {
    expect(formatDuration(0)).toBe("0s");
    expect(formatDuration(20)).toBe("20ms");
    expect(formatDuration(1000)).toBe("1s");
    expect(formatDuration(1001)).toBe("2s");
    expect(formatDuration(360_000)).toBe("6m0s");
    expect(formatDuration(61_500)).toBe("1m2s");
  });
});
