import { describe, expect, it } from "vitest";
import type { Token } from "node-llama-cpp";
import { seededRandom } from "../../../lib/seeded-random.js";
import { judgeProposals, type TargetSample } from "./speculative-acceptance.js";

const distribution = (entries: Array<[number, number]>) => new Map(entries.map(([token, p]) => [token as Token, p]));

function draw(probabilities: ReadonlyMap<Token, number>, random: () => number): Token {
  let left = random();
  let last = 0 as Token;
  for (const [token, p] of probabilities) {
    last = token;
    left -= p;
    if (left < 0) return token;
  }
  return last;
}

describe("judging a proposal drawn from the draft's distribution", () => {
  // The target prefers 1; the draft prefers 4, which the target never samples.
  const p = distribution([[1, 0.5], [2, 0.3], [3, 0.2]]);
  const q = distribution([[4, 0.5], [1, 0.2], [2, 0.2], [3, 0.1]]);
  const BONUS = 99 as Token;

  it("gives tokens distributed as the target's own sampling, keeping a proposal as often as the two agree", () => {
    const random = seededRandom(7);
    const counts = new Map<number, number>();
    const trials = 200_000;
    let kept = 0;
    for (let i = 0; i < trials; i++) {
      const proposal = draw(q, random);
      const sampled: TargetSample[] = [{ token: draw(p, random), probabilities: p }, { token: BONUS }];
      const verdict = judgeProposals([{ token: proposal, q }], sampled, random);
      const out = verdict.kept === 1 ? proposal : verdict.next;
      kept += verdict.kept;
      counts.set(out, (counts.get(out) ?? 0) + 1);
    }
    for (const [token, probability] of p) expect(Math.abs((counts.get(token) ?? 0) / trials - probability)).toBeLessThan(0.006);
    expect(counts.get(4)).toBeUndefined();
    // Σ min(p, q) = 0.2 + 0.2 + 0.1: a greedy draft (always 4) matched against the target's sample would keep none.
    expect(Math.abs(kept / trials - 0.5)).toBeLessThan(0.006);
  });

  it("keeps every proposal where the draft's distribution is the target's, and then takes the target's next token", () => {
    const random = seededRandom(11);
    for (let i = 0; i < 1_000; i++) {
      const proposals = [{ token: draw(p, random), q: p }, { token: draw(p, random), q: p }];
      const verdict = judgeProposals(proposals, [{ token: 3 as Token, probabilities: p }, { token: 3 as Token, probabilities: p }, { token: BONUS }], random);
      expect(verdict).toEqual({ kept: 2, next: BONUS });
    }
  });

  it("never keeps a token the target cannot sample, and replaces it from what the target wants more than the draft", () => {
    const random = seededRandom(3);
    for (let i = 0; i < 1_000; i++) {
      const verdict = judgeProposals([{ token: 4 as Token, q }], [{ token: 2 as Token, probabilities: p }, { token: BONUS }], random);
      expect(verdict.kept).toBe(0);
      expect([1, 2, 3]).toContain(verdict.next);
    }
  });
});

describe("judging greedy proposals", () => {
  it("keeps proposals while they equal the target's tokens and takes the target's token where they differ", () => {
    const sampled = [5, 6, 8, 9].map((token): TargetSample => ({ token: token as Token }));
    expect(judgeProposals([5, 6, 7].map((token) => ({ token: token as Token })), sampled)).toEqual({ kept: 2, next: 8 });
    expect(judgeProposals([5, 6, 8].map((token) => ({ token: token as Token })), sampled)).toEqual({ kept: 3, next: 9 });
    expect(judgeProposals([4].map((token) => ({ token: token as Token })), sampled)).toEqual({ kept: 0, next: 5 });
  });
});
