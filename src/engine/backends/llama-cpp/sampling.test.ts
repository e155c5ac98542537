import { describe, expect, it } from "vitest";
import { plainSampling } from "./sampling.js";

describe("plainSampling", () => {
  it("fills llama.cpp's defaults, and keeps only the temperature for greedy", () => {
    expect(plainSampling({}, 256)).toEqual({ temperature: 0.8, topK: 40, topP: 0.95, minP: 0.05, seed: undefined });
    expect(plainSampling({ temperature: 0, topK: 5000 }, 256)).toEqual({ temperature: 0, topK: 1, topP: 1, minP: 0 });
    expect(plainSampling({ temperature: 1.2, topK: 10, topP: 0.5, minP: 0, seed: -1 }, 256)).toEqual({ temperature: 1.2, topK: 10, topP: 0.5, minP: 0, seed: 4294967294 });
  });

  it("leaves node-llama-cpp's sampler to requests with a bias, penalties or a top-k the native sampler does not pick", () => {
    expect(plainSampling({ logitBias: { 7: -100 } }, 256)).toBeUndefined();
    expect(plainSampling({ repeatPenalty: 1.1 }, 256)).toBeUndefined();
    expect(plainSampling({ presencePenalty: 0.5 }, 256)).toBeUndefined();
    expect(plainSampling({ frequencyPenalty: 0.5 }, 256)).toBeUndefined();
    expect(plainSampling({ topK: 0 }, 256)).toBeUndefined();
    expect(plainSampling({ topK: 257 }, 256)).toBeUndefined();
    // A penalty of 1 and an empty bias change nothing.
    expect(plainSampling({ repeatPenalty: 1, logitBias: {} }, 256)).toBeDefined();
  });
});
