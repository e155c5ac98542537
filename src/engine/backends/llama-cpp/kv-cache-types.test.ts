import { describe, expect, it } from "vitest";
import { flashAttentionFor, kvCacheContextOptions } from "./kv-cache-types.js";

describe("flash attention", () => {
  it("auto turns it on where every layer runs on a GPU, as llama-server's default", () => {
    expect(flashAttentionFor(undefined, true, undefined)).toBe(true);
    expect(flashAttentionFor("auto", true, undefined)).toBe(true);
    expect(flashAttentionFor("auto", false, undefined)).toBe(false);
  });

  it("follows an explicit choice, but a quantized V cache needs it on", () => {
    expect(flashAttentionFor("on", false, undefined)).toBe(true);
    expect(flashAttentionFor("off", true, undefined)).toBe(false);
    expect(flashAttentionFor("off", false, { k: "q8_0", v: "f16" })).toBe(false);
    expect(flashAttentionFor("auto", false, { k: "f16", v: "q4_0" })).toBe(true);
  });

  it("gives the context its setting beside the KV cache types", () => {
    expect(kvCacheContextOptions({}, false)).toEqual({ flashAttention: false });
    expect(kvCacheContextOptions({ kvCacheTypes: { k: "q8_0", v: "q8_0" } }, false)).toMatchObject({ flashAttention: true, experimentalKvCacheKeyType: expect.anything() });
  });
});
