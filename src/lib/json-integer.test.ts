import { describe, expect, it } from "vitest";
import { readTopLevelInteger } from "./json-integer.js";

describe("readTopLevelInteger", () => {
  it("reads a top-level integer exactly where a double cannot", () => {
    expect(readTopLevelInteger('{"seed": 9223372036854775807}', "seed")).toBe(2n ** 63n - 1n);
    expect(readTopLevelInteger('{"a":1,"seed":-9223372036854775809 }', "seed")).toBe(-(2n ** 63n) - 1n);
  });

  it("skips the key inside strings and nested objects, and keeps the last of duplicates as JSON.parse does", () => {
    const text = '{"note":"\\"seed\\": 1","nested":{"seed":2},"list":[{"seed":3}],"seed":4,"se\\u0065d":5}';
    expect(readTopLevelInteger(text, "seed")).toBe(5n);
    expect(readTopLevelInteger('{"nested":{"seed":2}}', "seed")).toBeUndefined();
  });

  it("reads nothing for a value that is no plain integer", () => {
    for (const value of ['"7"', "1.5", "1e19", "null", "[1]"]) expect(readTopLevelInteger(`{"seed":${value}}`, "seed")).toBeUndefined();
  });
});
