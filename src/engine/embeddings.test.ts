import { describe, expect, it } from "vitest";
import { checkDimensions, checkInputsNotEmpty, toUnitLength } from "./embeddings.js";

describe("embedding checks and shaping", () => {
  it("scales a vector to length 1 and leaves a zero vector at zero", () => {
    expect(toUnitLength(new Float64Array([3, 4]))).toEqual([0.6, 0.8]);
    expect(toUnitLength([0, 0])).toEqual([0, 0]);
  });

  it("accepts no dimensions or the model's own, and refuses any other length naming the one it has", () => {
    expect(() => checkDimensions("m", 576, undefined)).not.toThrow();
    expect(() => checkDimensions("m", 576, 576)).not.toThrow();
    expect(() => checkDimensions("m", 576, 256)).toThrow(/model m gives vectors of 576 dimensions and cannot shorten them/);
  });

  it("refuses an empty text or token list, naming its index", () => {
    expect(() => checkInputsNotEmpty(["a", [1]])).not.toThrow();
    expect(() => checkInputsNotEmpty(["a", [1], ""])).toThrow(expect.objectContaining({ code: "invalid_request", details: { param: "input.2" } }));
    expect(() => checkInputsNotEmpty([[]])).toThrow(/input.0: must not be empty/);
  });
});
