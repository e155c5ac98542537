import { describe, expect, it } from "vitest";
import { flashAttentionFor, kvCacheContextOptions } from "./kv-cache-types.js";

describe("flash attention", () => {
  it("leaves auto to llama.cpp, and follows an explicit choice", () => {
    expect(flashAttentionFor(undefined, undefined)).toBeUndefined();
    expect(flashAttentionFor("auto", undefined)).toBeUndefined();
    expect(flashAttentionFor("on", undefined)).toBe(true);
    expect(flashAttentionFor("off", undefined)).toBe(false);
  });

  it("is on for a quantized V cache, which llama.cpp reads only through it", () => {
    expect(flashAttentionFor("off", { k: "q8_0", v: "f16" })).toBe(false);
    expect(flashAttentionFor("auto", { k: "f16", v: "q4_0" })).toBe(true);
  });

  it("gives the context its setting beside the KV cache types", () => {
    expect(kvCacheContextOptions({})).toEqual({});
    expect(kvCacheContextOptions({ flashAttention: "off" })).toEqual({ flashAttention: false });
    expect(kvCacheContextOptions({ kvCacheTypes: { k: "q8_0", v: "q8_0" } })).toMatchObject({ flashAttention: true, experimentalKvCacheKeyType: expect.anything() });
  });
});
