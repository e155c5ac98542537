import { describe, expect, it } from "vitest";
import { PrefillChunker } from "./prefill-chunks.js";

describe("PrefillChunker", () => {
  it("starts alone with an efficient batch and a shared step with a small chunk, then sizes alone chunks to about half a second", () => {
    const chunker = new PrefillChunker();
    expect(chunker.chunkTokens(false)).toBe(128);
    expect(chunker.chunkTokens(true)).toBe(32);
    chunker.record(128, 256, false);
    expect(chunker.chunkTokens(false)).toBe(250);
  });

  it("keeps alone chunks between 128 and 512 tokens", () => {
    const slow = new PrefillChunker();
    slow.record(128, 128 * 20, false); // 20 ms per token deep in a long prompt: 25 tokens would make half a second
    expect(slow.chunkTokens(false)).toBe(128);
    const fast = new PrefillChunker();
    fast.record(128, 64, false);
    expect(fast.chunkTokens(false)).toBe(512);
  });

  it("gives a context of one sequence whole batches from the first chunk, however slow its tokens", () => {
    const sole = new PrefillChunker(true);
    expect(sole.chunkTokens(false)).toBe(512);
    sole.record(512, 512 * 20, false);
    expect(sole.chunkTokens(false, 1024)).toBe(512);
  });

  it("takes bigger alone chunks deep in a prompt, where small batches cost more", () => {
    const chunker = new PrefillChunker();
    chunker.record(128, 128 * 20, false);
    expect(chunker.chunkTokens(false, 4096)).toBe(128);
    expect(chunker.chunkTokens(false, 8192)).toBe(256);
    expect(chunker.chunkTokens(false, 19000)).toBe(512);
    expect(new PrefillChunker().chunkTokens(false, 12000)).toBe(375);
    // A shared chunk is sized by the others' step alone.
    chunker.record(4, 100, true);
    expect(chunker.chunkTokens(true, 19000)).toBeLessThan(128);
  });

  it("sizes a shared chunk to cost about half what the others' step costs", () => {
    const chunker = new PrefillChunker();
    chunker.record(100, 200, false);
    // 2 ms per prompt token; a shared step of 4 tokens took 28 ms, so the others' step is 20 ms: 5 tokens cost half.
    chunker.record(4, 28, true);
    expect(chunker.chunkTokens(true)).toBe(5);
    expect(chunker.chunkTokens(false)).toBe(250);
  });

  it("keeps at least one token per shared chunk and ignores empty measurements", () => {
    const chunker = new PrefillChunker();
    chunker.record(10, 100, true);
    chunker.record(0, 5, false);
    expect(chunker.chunkTokens(true)).toBe(1);
  });

  it("sizes shared chunks from the timed steps, and shrinks them as prompt tokens get dearer", () => {
    const chunker = new PrefillChunker();
    chunker.record(100, 200, false); // 2 ms per token
    chunker.recordStep(40, false); // the others' step without a chunk
    expect(chunker.chunkTokens(true)).toBe(10); // half of 40 ms at 2 ms per token
    // Deep in a long prompt each chunk token adds 6 ms to the step the others see.
    for (let i = 0; i < 20; i++) {
      const size = chunker.chunkTokens(true);
      chunker.record(size, 2 * size, true);
      chunker.recordStep(40 + 6 * size, true);
    }
    expect(chunker.chunkTokens(true)).toBe(3);
  });

  it("ignores steps without shared chunk tokens, and a step's noise never makes tokens look free", () => {
    const chunker = new PrefillChunker();
    chunker.record(100, 200, false);
    chunker.recordStep(40, false);
    chunker.recordStep(500, true); // a chunk evaluated alone: no shared tokens, nothing learnt
    expect(chunker.chunkTokens(true)).toBe(10);
    chunker.record(10, 20, true);
    chunker.recordStep(30, true); // faster than the step without a chunk: counted as a tenth of the step
    expect(chunker.chunkTokens(true)).toBeGreaterThan(10);
  });
});
