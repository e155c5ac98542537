import { describe, expect, it } from "vitest";
import { parseExpiry } from "./expiry.js";

const NOW = Date.parse("2026-11-22T03:00:00Z");

describe("parseExpiry", () => {
  it("reads durations from now", () => {
    expect(parseExpiry("30d", NOW)).toBe(NOW + 30 * 86_400_000);
    expect(parseExpiry("12h", NOW)).toBe(NOW + 12 * 3_600_000);
    expect(parseExpiry("90m", NOW)).toBe(NOW + 90 * 60_000);
    expect(parseExpiry("2w", NOW)).toBe(NOW + 14 * 86_400_000);
  });

  it("reads a calendar date as 00:00 UTC of that day, and a date-time as written", () => {
    expect(parseExpiry("2026-12-31", NOW)).toBe(Date.parse("2026-12-31T00:00:00Z"));
    expect(parseExpiry("2026-12-31T12:30:00Z", NOW)).toBe(Date.parse("2026-12-31T12:30:00Z"));
  });

  it("refuses the past, impossible dates and anything else", () => {
    expect(() => parseExpiry("2026-01-01", NOW)).toThrow(/not in the future/);
    expect(() => parseExpiry("0d", NOW)).toThrow(/not in the future/);
    expect(() => parseExpiry("2027-02-31", NOW)).toThrow(/invalid expiry/);
    expect(() => parseExpiry("soon", NOW)).toThrow(/invalid expiry/);
    expect(() => parseExpiry("30", NOW)).toThrow(/invalid expiry/);
  });
});
