import { describe, expect, it } from "vitest";
import { PrefillChunker } from "./prefill-chunks.js";

describe("PrefillChunker", () => {
  it("starts with a small chunk, then sizes alone chunks to about a quarter second", () => {
    const chunker = new PrefillChunker();
    expect(chunker.chunkTokens(false)).toBe(32);
    chunker.record(32, 64);
    expect(chunker.chunkTokens(false)).toBe(125);
  });

  it("follows a prompt token's cost as it grows, within the bounds", () => {
    const chunker = new PrefillChunker();
    chunker.record(100, 200);
    for (let i = 0; i < 20; i++) chunker.record(100, 2000); // 20 ms per token deep in a long prompt
    expect(chunker.chunkTokens(false)).toBe(64);
    for (let i = 0; i < 20; i++) chunker.record(512, 5);
    chunker.record(0, 5); // ignored
    expect(chunker.chunkTokens(false)).toBe(512);
  });

  it("gives one prompt token per step while other sequences generate", () => {
    const chunker = new PrefillChunker();
    expect(chunker.chunkTokens(true)).toBe(1);
    chunker.record(100, 200);
    expect(chunker.chunkTokens(true)).toBe(1);
  });
});
