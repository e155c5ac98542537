import { describe, expect, it } from "vitest";
import { formatDuration, parseDuration } from "./duration.js";

describe("parseDuration", () => {
  it("reads seconds and Go-style durations as Ollama's keep_alive does", () => {
    expect(parseDuration(300)).toBe(300_000);
    expect(parseDuration("0")).toBe(0);
    expect(parseDuration("5m")).toBe(300_000);
    expect(parseDuration("1h30m")).toBe(5_400_000);
    expect(parseDuration("90s")).toBe(90_000);
    expect(parseDuration("500ms")).toBe(500);
    expect(parseDuration("2.5s")).toBe(2500);
  });

  it("reads any negative duration as forever", () => {
    expect(parseDuration(-1)).toBe(-1);
    expect(parseDuration("-1")).toBe(-1);
    expect(parseDuration("-5m")).toBe(-1);
  });

  it("refuses what is not a duration", () => {
    for (const bad of ["", "5 minutes", "m", "5d", "1h-3m", "abc", Number.NaN]) expect(parseDuration(bad)).toBeUndefined();
  });
});

describe("formatDuration", () => {
  it("reads back as the flags write it", () => {
    const cases: Array<[number, string]> = [[300_000, "5m"], [5_400_000, "1h30m"], [45_000, "45s"], [0, "0s"], [-1, "forever"], [119_600, "2m"], [250, "250ms"]];
    expect(cases.map(([ms]) => formatDuration(ms))).toEqual(cases.map(([, text]) => text));
  });
});
