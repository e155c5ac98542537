/**
 * The vendors' rate-limit headers for a key's limit snapshot. Anthropic reports reset times in RFC 3339,
 * OpenAI as durations (`1s`, `6m0s`), both meaning "fully replenished".
 * @see https://docs.claude.com/en/api/rate-limits#response-headers
 * @see https://platform.openai.com/docs/guides/rate-limits#rate-limits-in-headers
 */
import type { LimitSnapshot, LimitState } from "./rate-limiter.js";

/** Headers for every response of a key with limits; none for a key without. */
export function toRateLimitHeaders(snapshot: LimitSnapshot, now: number): Record<string, string> {
  return {
    ...(snapshot.requests ? headersFor("requests", snapshot.requests, now) : {}),
    ...(snapshot.tokens ? headersFor("tokens", snapshot.tokens, now) : {}),
  };
}

function headersFor(kind: "requests" | "tokens", state: LimitState, now: number): Record<string, string> {
  return {
    [`anthropic-ratelimit-${kind}-limit`]: String(state.limit),
    [`anthropic-ratelimit-${kind}-remaining`]: String(state.remaining),
    [`anthropic-ratelimit-${kind}-reset`]: new Date(Math.ceil(state.resetAt / 1000) * 1000).toISOString().replace(".000Z", "Z"),
    [`x-ratelimit-limit-${kind}`]: String(state.limit),
    [`x-ratelimit-remaining-${kind}`]: String(state.remaining),
    [`x-ratelimit-reset-${kind}`]: formatDuration(state.resetAt - now),
  };
}

/** A wait as OpenAI writes it: `0s`, `450ms`, `17s`, `6m0s`. */
export function formatDuration(ms: number): string {
  if (ms <= 0) return "0s";
  if (ms < 1000) return `${Math.ceil(ms)}ms`;
  const seconds = Math.ceil(ms / 1000);
  return seconds < 60 ? `${seconds}s` : `${Math.floor(seconds / 60)}m${seconds % 60}s`;
}
