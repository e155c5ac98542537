/**
 * Which of a draft's proposals a target keeps, and the token after them. A proposal drawn from the draft's own
 * sampling distribution q (at a temperature above 0) is judged by standard speculative sampling (Leviathan et al.,
 * Chen et al., 2023): kept with probability min(1, p(x) / q(x)), where p is the target's sampling distribution at its
 * position; the first proposal turned down is replaced by a token drawn from the residual max(0, p − q), renormalised.
 * Each token out is then distributed exactly as the target's own sampling would give it, and a draft whose q is close
 * to p is kept almost always, however flat both are. A greedy proposal (temperature 0, or no q) is kept while it equals
 * the token the target sampled at its position, which is exact for greedy decoding; the target's token replaces the
 * first one that differs.
 */
import type { Token } from "node-llama-cpp";

/** A proposal, with the draft's sampling distribution at its position when it was drawn from it. */
export interface Proposal {
  token: Token;
  q?: ReadonlyMap<Token, number>;
}

/** What the target sampled at a position, with its sampling distribution when it was asked for. */
export interface TargetSample {
  token: Token;
  probabilities?: ReadonlyMap<Token, number>;
}

export interface Verdict {
  /** Proposals kept, from the first. */
  kept: number;
  /** The token after them: the target's own past the last proposal, else the replacement of the first turned down. */
  next: Token;
}

/**
 * Judges `proposals` against `sampled`, the target's samples at the position before each proposal and after the last
 * one (so one more than the proposals). `random` draws uniformly from [0, 1).
 */
export function judgeProposals(proposals: readonly Proposal[], sampled: readonly TargetSample[], random: () => number = Math.random): Verdict {
  for (let kept = 0; kept < proposals.length; kept++) {
    const { token, q } = proposals[kept]!;
    const target = sampled[kept]!;
    const p = target.probabilities;
    if (!q || !p || !q.has(token)) {
      if (target.token !== token) return { kept, next: target.token };
      continue;
    }
    const ratio = (p.get(token) ?? 0) / q.get(token)!;
    if (ratio >= 1 || random() < ratio) continue;
    return { kept, next: fromResidual(p, q, random) ?? target.token };
  }
  return { kept: proposals.length, next: sampled[proposals.length]!.token };
}

/**
 * A token drawn from max(0, p − q) renormalised, or undefined where that is empty (p ≤ q everywhere up to rounding,
 * when a proposal can only have been turned down by rounding).
 */
function fromResidual(p: ReadonlyMap<Token, number>, q: ReadonlyMap<Token, number>, random: () => number): Token | undefined {
  let total = 0;
  for (const [token, probability] of p) total += Math.max(0, probability - (q.get(token) ?? 0));
  if (!(total > 1e-9)) return undefined;
  let left = random() * total;
  let last: Token | undefined;
  for (const [token, probability] of p) {
    const weight = Math.max(0, probability - (q.get(token) ?? 0));
    if (weight <= 0) continue;
    last = token;
    left -= weight;
    if (left < 0) return token;
  }
  return last;
}
