import { describe, expect, it } from "vitest";
import { formatTable } from "./text-table.js";

describe("formatTable", () => {
  it("pads columns, right-aligns numeric ones with their titles and trims line ends", () => {
    expect(formatTable(["NAME", "N", "NOTE"], [["alpha", "5", "x"], ["b", "120", ""]])).toBe(
      ["NAME     N  NOTE", "alpha    5  x", "b      120"].join("\n"),
    );
  });
});
