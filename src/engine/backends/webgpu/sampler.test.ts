import { describe, expect, it } from "vitest";
import { argmax, createSampler, logprobsOf, nucleus, topK } from "./sampler.js";

const logits = () => Float32Array.from([1, 3, 3, 0.5, -2, 2.9]);

describe("CPU sampler", () => {
  it("greedy without penalties defers to the GPU argmax; ties go to the lowest index", () => {
    expect(createSampler({ temperature: 0 }).usesGpuArgmax).toBe(true);
    expect(argmax(logits())).toBe(1);
    expect(createSampler({ temperature: 0 }).pick(logits(), [])).toBe(1);
  });

  it("applies penalties before greedy picking, so a repeated token loses its lead", () => {
    const sampler = createSampler({ temperature: 0, repeatPenalty: 2 });
    expect(sampler.usesGpuArgmax).toBe(false);
    // 1 and 2 are penalised (3 → 1.5); 5 (2.9) wins.
    expect(sampler.pick(logits(), [1, 2])).toBe(5);
    expect(createSampler({ temperature: 0, presencePenalty: 0.2 }).pick(logits(), [1])).toBe(2);
  });

  it("repeats a draw for the same seed and keeps to the top-k candidates", () => {
    const draws = (seed: number) => {
      const sampler = createSampler({ temperature: 1.5, topK: 2, topP: 1, minP: 0, seed });
      return Array.from({ length: 40 }, () => sampler.pick(logits(), []));
    };
    expect(draws(7)).toEqual(draws(7));
    expect(new Set(draws(7))).toEqual(new Set([1, 2]));
  });

  it("draws from a row's best candidates what it draws from the whole row, for the same seed", () => {
    const row = Float32Array.from({ length: 49_152 }, (_, i) => Math.sin(i * 12.9898) * 6);
    const best = topK(row, 64);
    for (const options of [{}, { topK: 64, topP: 0.9, minP: 0, temperature: 1.3 }, { topK: 5, temperature: 0.7 }]) {
      const [whole, top] = [createSampler({ ...options, seed: 11 }), createSampler({ ...options, seed: 11 })];
      expect(top.needsOnlyTop).toBe(true);
      const fromWhole = Array.from({ length: 50 }, () => whole.pick(row.slice(), []));
      expect(Array.from({ length: 50 }, () => top.pickFrom(best))).toEqual(fromWhole);
      expect(new Set(fromWhole).size).toBeGreaterThan(1);
    }
    // What needs more than the best candidates: penalties, a logit bias, top-k off or beyond them, greedy.
    for (const options of [{ repeatPenalty: 1.1 }, { logitBias: { 5: 2 } }, { topK: 0 }, { topK: 65 }, { temperature: 0 }]) {
      expect(createSampler(options).needsOnlyTop, JSON.stringify(options)).toBe(false);
    }
  });

  it("top-p keeps the smallest prefix reaching p, min-p drops the unlikely", () => {
    const picks = (options: Parameters<typeof createSampler>[0]) => {
      const sampler = createSampler({ temperature: 1, seed: 3, ...options });
      return new Set(Array.from({ length: 200 }, () => sampler.pick(logits(), [])));
    };
    // Probabilities ≈ 0.04, 0.32, 0.32, 0.03, 0.00, 0.29 (ids 1, 2, 5 hold 0.93).
    expect(picks({ topK: 0, topP: 0.5, minP: 0 })).toEqual(new Set([1, 2]));
    expect(picks({ topK: 0, topP: 0.9, minP: 0 })).toEqual(new Set([1, 2, 5]));
    expect(picks({ topK: 0, topP: 1, minP: 0.5 })).toEqual(new Set([1, 2, 5]));
  });

  it("reports log-softmax logprobs with the best alternatives first", () => {
    const result = logprobsOf(logits(), 5, 2, (id) => `t${id}`);
    const logZ = Math.log([...logits()].reduce((sum, value) => sum + Math.exp(value), 0));
    expect(result.token).toBe("t5");
    expect(result.logprob).toBeCloseTo(2.9 - logZ, 5);
    expect(result.top.map((alt) => alt.token)).toEqual(["t1", "t2"]);
  });

  it("selects the same top-k as a full sort, ties to the lower id, on a vocabulary-sized input", () => {
    // Values on a coarse grid, so many tie; a few −∞ (masked) among them.
    let state = 12345;
    const next = () => (state = (state * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const values = Float32Array.from({ length: 151_936 }, () => (next() < 0.001 ? -Infinity : Math.round(next() * 400) / 20));
    const sorted = Array.from(values, (logit, id) => ({ id, logit })).sort((a, b) => b.logit - a.logit || a.id - b.id);
    for (const k of [1, 40, 64, 1000]) expect(topK(values, k)).toEqual(sorted.slice(0, k));
    expect(topK(Float32Array.from([1, 3, 3, 0.5]), 0).map((c) => c.id)).toEqual([1, 2, 0, 3]);
  });

  it("with top-k off, keeps the same top-p candidates as sorting the whole vocabulary", () => {
    let state = 99;
    const next = () => (state = (state * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const values = Float32Array.from({ length: 151_936 }, () => -8 + 4 * next());
    for (let i = 0; i < 30; i++) values[Math.floor(next() * values.length)] = 6 + 4 * next();
    const all = Array.from(values, (logit, id) => ({ id, logit })).sort((a, b) => b.logit - a.logit || a.id - b.id);
    const weights = all.map(({ logit }) => Math.exp(logit - all[0]!.logit));
    const total = weights.reduce((a, b) => a + b, 0);
    for (const p of [0.5, 0.9, 0.95, 0.999]) {
      let cumulative = 0;
      const prefix = all.findIndex((_, i) => (cumulative += weights[i]! / total) >= p) + 1;
      expect(nucleus(values, p)).toEqual(all.slice(0, prefix));
    }
    // And the sampler draws from that prefix.
    const sampler = createSampler({ temperature: 1, topK: 0, topP: 0.5, minP: 0, seed: 5 });
    const allowed = new Set(nucleus(values, 0.5).map((c) => c.id));
    for (let i = 0; i < 20; i++) expect(allowed.has(sampler.pick(values.slice(), []))).toBe(true);
  });
});
