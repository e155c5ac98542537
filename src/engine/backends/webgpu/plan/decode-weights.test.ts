import { describe, expect, it } from "vitest";
import { GgmlType } from "../gguf/quant-types.js";
import { interleaveHalves } from "./decode-weights.js";

describe("interleaveHalves (NEOX rotation pairs made adjacent rows)", () => {
  it("orders each head's rows 0, D/2, 1, D/2+1, … for a vector of one value per row", () => {
    const rows = Float32Array.from({ length: 12 }, (_, i) => i); // two heads of 6
    expect([...interleaveHalves(rows, 6)]).toEqual([0, 3, 1, 4, 2, 5, 6, 9, 7, 10, 8, 11]);
  });

  it("moves whole rows of every plane of a planar matrix", () => {
    // 4 rows (one head of 4), 2 words of quants and 1 of meta per row; high is empty.
    const quants = Uint32Array.from({ length: 8 }, (_, i) => 100 + i);
    const meta = Uint32Array.from({ length: 4 }, (_, i) => 200 + i);
    const out = interleaveHalves({ type: GgmlType.Q4_0, rows: 4, cols: 64, quants, meta, high: new Uint32Array(0) }, 4);
    expect([...out.quants]).toEqual([100, 101, 104, 105, 102, 103, 106, 107]);
    expect([...out.meta]).toEqual([200, 202, 201, 203]);
    expect(out.high.length).toBe(0);
  });
});
