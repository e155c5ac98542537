import { describe, expect, it } from "vitest";
import { PrefillChunker } from "./prefill-chunks.js";

describe("PrefillChunker", () => {
  it("starts with a small chunk, then sizes alone chunks to about a quarter second", () => {
    const chunker = new PrefillChunker();
    expect(chunker.chunkTokens(false)).toBe(32);
    chunker.record(32, 64, false);
    expect(chunker.chunkTokens(false)).toBe(125);
  });

  it("sizes a shared chunk to cost about half what the others' step costs", () => {
    const chunker = new PrefillChunker();
    chunker.record(100, 200, false);
    // 2 ms per prompt token; a shared step of 4 tokens took 28 ms, so the others' step is 20 ms: 5 tokens cost half.
    chunker.record(4, 28, true);
    expect(chunker.chunkTokens(true)).toBe(5);
    expect(chunker.chunkTokens(false)).toBe(125);
  });

  it("keeps at least one token per shared chunk and ignores empty measurements", () => {
    const chunker = new PrefillChunker();
    chunker.record(10, 100, true);
    chunker.record(0, 5, false);
    expect(chunker.chunkTokens(true)).toBe(1);
  });

  it("sizes shared chunks from the timed undisturbed step, and shrinks them as prompt tokens get dearer", () => {
    const chunker = new PrefillChunker();
    chunker.record(100, 200, false); // 2 ms per token
    chunker.recordDecodeStep(40);
    expect(chunker.chunkTokens(true)).toBe(10); // half of 40 ms at 2 ms per token
    // Deep in a long prompt a 10-token chunk stretches the 40 ms step to 100 ms: 6 ms per token now.
    for (let i = 0; i < 20; i++) chunker.record(chunker.chunkTokens(true), 40 + 6 * chunker.chunkTokens(true), true);
    expect(chunker.chunkTokens(true)).toBe(3);
  });
});
