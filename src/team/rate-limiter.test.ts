import { describe, expect, it } from "vitest";
import { EngineError } from "../engine/index.js";
import { RateLimiter } from "./rate-limiter.js";

/** A clock the test moves by hand. */
function manualClock(start = 1_000_000) {
  let now = start;
  return { now: () => now, advance: (ms: number) => void (now += ms) };
}

function rejection(run: () => unknown): EngineError {
  try {
    run();
  } catch (error) {
    if (error instanceof EngineError) return error;
    throw error;
  }
  throw new Error("expected a rate_limited error");
}

describe("RateLimiter", () => {
  it("admits up to rpm requests in the window, then refuses with the wait until the oldest leaves", () => {
    const clock = manualClock();
    const limiter = new RateLimiter(clock.now);
    limiter.admit("k", { rpm: 2 }, 0);
    clock.advance(10_000);
    limiter.admit("k", { rpm: 2 }, 0);
    clock.advance(5_000);
    const error = rejection(() => limiter.admit("k", { rpm: 2 }, 0));
    expect(error.code).toBe("rate_limited");
    expect(error.details.retryAfter).toBe(45);
    clock.advance(45_000);
    expect(() => limiter.admit("k", { rpm: 2 }, 0)).not.toThrow();
  });

  it("keeps keys apart", () => {
    const limiter = new RateLimiter(manualClock().now);
    limiter.admit("a", { rpm: 1 }, 0);
    expect(() => limiter.admit("b", { rpm: 1 }, 0)).not.toThrow();
    expect(() => limiter.admit("a", { rpm: 1 }, 0)).toThrow(EngineError);
  });

  it("counts settled input + output tokens against tpm", () => {
    const clock = manualClock();
    const limiter = new RateLimiter(clock.now);
    const first = limiter.admit("k", { tpm: 100 }, 30);
    expect(limiter.snapshot("k", { tpm: 100 }).tokens?.remaining).toBe(70);
    first.settle(90);
    expect(limiter.snapshot("k", { tpm: 100 }).tokens?.remaining).toBe(10);
    clock.advance(20_000);
    const error = rejection(() => limiter.admit("k", { tpm: 100 }, 20));
    expect(error.details.retryAfter).toBe(40);
    limiter.admit("k", { tpm: 100 }, 10);
    expect(limiter.snapshot("k", { tpm: 100 }).tokens?.remaining).toBe(0);
  });

  it("refuses a request that alone needs more than the tokens per minute", () => {
    const limiter = new RateLimiter(manualClock().now);
    const error = rejection(() => limiter.admit("k", { tpm: 50 }, 51));
    expect(error.details.retryAfter).toBe(60);
    expect(error.message).toContain("50 tokens per minute");
  });

  it("does not count a refused request", () => {
    const clock = manualClock();
    const limiter = new RateLimiter(clock.now);
    limiter.admit("k", { rpm: 1, tpm: 1000 }, 10);
    expect(() => limiter.admit("k", { rpm: 1, tpm: 1000 }, 10)).toThrow(EngineError);
    expect(limiter.snapshot("k", { rpm: 1, tpm: 1000 })).toEqual({
      requests: { limit: 1, remaining: 0, resetAt: clock.now() + 60_000 },
      tokens: { limit: 1000, remaining: 990, resetAt: clock.now() + 60_000 },
    });
  });

  it("reports a fresh window for a key without traffic, and nothing for a key without limits", () => {
    const clock = manualClock();
    const limiter = new RateLimiter(clock.now);
    expect(limiter.snapshot("k", { rpm: 5 })).toEqual({ requests: { limit: 5, remaining: 5, resetAt: clock.now() } });
    expect(limiter.snapshot("k", {})).toEqual({});
    for (let i = 0; i < 100; i++) limiter.admit("free", {}, 1000);
    expect(limiter.snapshot("free", { rpm: 1 }).requests?.remaining).toBe(1);
  });

  it("forgets requests once the window has passed", () => {
    const clock = manualClock();
    const limiter = new RateLimiter(clock.now);
    limiter.admit("k", { rpm: 1 }, 0);
    clock.advance(60_000);
    expect(limiter.snapshot("k", { rpm: 1 }).requests?.remaining).toBe(1);
  });
});
