import { describe, expect, it } from "vitest";
import { plainSampling } from "./sampling.js";

const DEFAULTS = { temperature: 0.8, topK: 40, topP: 0.95, minP: 0.05 };

describe("plainSampling", () => {
  it("passes the native sampler temperature, top-k, top-p, min-p and seed, and only the temperature for greedy", () => {
    expect(plainSampling({ ...DEFAULTS, seed: 7 }, 256)).toEqual({ ...DEFAULTS, seed: 7 });
    expect(plainSampling(DEFAULTS, 256)).toEqual({ ...DEFAULTS, seed: undefined });
    expect(plainSampling({ temperature: 0 }, 256)).toEqual({ temperature: 0, topK: 1, topP: 1, minP: 0 });
  });

  it("leaves node-llama-cpp's sampler to grammars, token biases, penalties and a top-k the native sampler does not pick", () => {
    // Only their presence counts: plainSampling never reads them.
    const present = (() => { throw new Error("read"); }) as never;
    expect(plainSampling({ ...DEFAULTS, grammarEvaluationState: present }, 256)).toBeUndefined();
    expect(plainSampling({ ...DEFAULTS, tokenBias: present }, 256)).toBeUndefined();
    expect(plainSampling({ temperature: 0, tokenBias: present }, 256)).toBeUndefined();
    expect(plainSampling({ ...DEFAULTS, repeatPenalty: { punishTokens: [], penalty: 1.1 } }, 256)).toBeUndefined();
    expect(plainSampling({ ...DEFAULTS, dryRepeatPenalty: { strength: 0.8 } }, 256)).toBeUndefined();
    expect(plainSampling({ ...DEFAULTS, xtc: { probability: 0.5, threshold: 0.1 } }, 256)).toBeUndefined();
    expect(plainSampling({ ...DEFAULTS, topK: 0 }, 256)).toBeUndefined();
    expect(plainSampling({ ...DEFAULTS, topK: 257 }, 256)).toBeUndefined();
  });
});
