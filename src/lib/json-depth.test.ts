import { describe, expect, it } from "vitest";
import { findTooDeep, JsonTooDeepError, MAX_JSON_DEPTH, parseBoundedJson } from "./json-depth.js";

const nested = (levels: number) => `${"[".repeat(levels)}${"]".repeat(levels)}`;

describe("the JSON nesting limit", () => {
  it("accepts exactly the limit and names the path one level beyond it", () => {
    expect(findTooDeep(JSON.parse(nested(MAX_JSON_DEPTH)))).toBeUndefined();
    expect(findTooDeep({ a: [{ b: 1 }, { c: JSON.parse(nested(MAX_JSON_DEPTH)) }] })).toBe("a.1.c.0.0.0.0.0.…");
    expect(findTooDeep({ a: [[1]] }, 2)).toBe("a.0");
    expect(findTooDeep("text", 0)).toBeUndefined();
  });

  it("walks a million levels without recursion", () => {
    expect(() => parseBoundedJson(nested(1_000_000), "input")).toThrow(new JsonTooDeepError("input.0.0.0.0.0.0.0.0.…"));
    expect(() => parseBoundedJson("{")).toThrow(SyntaxError);
  });
});
