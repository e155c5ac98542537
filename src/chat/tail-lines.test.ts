import { describe, expect, it } from "vitest";
import { tailLines } from "./tail-lines.js";

describe("tailLines", () => {
  it("keeps a text that fits as it is", () => {
    expect(tailLines("one\ntwo", 10, 5)).toBe("one\ntwo");
  });

  it("keeps the last lines that fit", () => {
    expect(tailLines("1\n2\n3\n4\n5", 10, 2)).toBe("4\n5");
  });

  it("counts wrapped rows and cuts a long line at a row boundary", () => {
    // "abcdefghij" is 3 rows at width 4 ("abcd", "efgh", "ij"); with "z" below, 2 rows leave one of them.
    expect(tailLines("abcdefghij\nz", 4, 2)).toBe("ij\nz");
    expect(tailLines("abcdefghijkl", 4, 2)).toBe("efghijkl");
  });
});
