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
    expect(formatDuration(300_000)).toBe("5m");
    expect(formatDuration(5_400_000)).toBe("1h30m");
    expect(formatDuration(45_000)).toBe("45s");
    expect(formatDuration(0)).toBe("0s");
    expect(formatDuration(119_600)).toBe("2m");
    expect(formatDuration(250)).toBe("250ms");
    expect(formatDuration(-1)).toBe("forever");
  });
});
