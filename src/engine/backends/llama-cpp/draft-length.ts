/**
 * How many tokens to draft in the next step, from what drafting has cost and gained on this machine. A step with n
 * proposals costs n draft steps and one target step of n + 1 tokens, and yields on average 1 + a + … + aⁿ tokens
 * when the target keeps each proposal with probability a. Drafting pays only where the target's extra tokens cost
 * less than the tokens they bring: on an idle CPU a step of a few tokens costs little more than one, while on a
 * CPU shared with other work every token costs its own compute and drafting slows generation down. So each step
 * takes the n (up to `--draft-max`) that yields the most tokens per millisecond by the costs fitted so far (the step
 * planner's line model, step-cost.ts). Where none pays, the target generates ALONE_TOKENS tokens on its own (its
 * usual token loop, cheaper per token than a step of one), and then one step drafts in full again, so that the fit
 * follows a machine whose load changes.
 */
import { StepCostModel, type StepCostParts } from "./step-cost.js";

/** Tokens the target generates alone, when drafting does not pay, before a step drafts again to measure. */
export const ALONE_TOKENS = 16;
/** Weight the acceptance seen so far keeps per later step (about the last 30 steps count). */
const FADE = 0.97;
/**
 * Priors that make drafting worth trying: a target step's tokens cost a tenth of its fixed part (as on an idle CPU)
 * and a draft step a fifth of a target step. They count for little (a hundredth of the step planner's prior
 * weight): a few steps of different sizes outweigh them, where the planner's prior stands for far more steps.
 */
const TARGET_PRIOR: StepCostParts = { fixed: 50, perToken: 5, perTokenPerKDepth: 0 };
const DRAFT_PRIOR: StepCostParts = { fixed: 0, perToken: 10, perTokenPerKDepth: 0 };
const PRIOR_WEIGHT = 0.001;

export class DraftLength {
  private readonly target = new StepCostModel(TARGET_PRIOR, PRIOR_WEIGHT);
  private readonly draft = new StepCostModel(DRAFT_PRIOR, PRIOR_WEIGHT);
  // Faded counts of proposals the target judged and of those it kept (one prior proposal kept).
  private judged = 1;
  private kept = 1;
  private probeNext = false;

  constructor(readonly max: number) {}

  /** Proposals to ask for in the next step (0: the target generates ALONE_TOKENS tokens on its own). */
  next(): number {
    const best = this.best();
    if (best > 0) return best;
    this.probeNext = !this.probeNext;
    return this.probeNext ? 0 : this.max;
  }

  /** The draft took `ms` to propose `proposals` tokens. */
  drafted(proposals: number, ms: number): void {
    this.draft.observe({ tokens: Math.max(1, proposals) }, ms);
  }

  /** The target took `ms` to evaluate `tokens` tokens (1 for a token of its own loop), `proposals` of them drafted, keeping `kept`. */
  verified(tokens: number, proposals: number, kept: number, ms: number): void {
    this.target.observe({ tokens }, ms);
    if (proposals === 0) return;
    // A step ends at the first rejection: it judged the kept proposals and, when it rejected one, that one.
    this.judged = FADE * this.judged + kept + (kept < proposals ? 1 : 0);
    this.kept = FADE * this.kept + kept;
  }

  /** The n that yields the most tokens per millisecond, 0 when drafting does not pay. */
  private best(): number {
    const accept = Math.min(this.kept / this.judged, 0.99);
    let best = { n: 0, rate: 1 / this.target.ms({ tokens: 1 }) };
    let expected = 1;
    for (let n = 1; n <= this.max; n++) {
      expected += accept ** n;
      const rate = expected / (this.draft.ms({ tokens: n }) + this.target.ms({ tokens: n + 1 }));
      if (rate > best.rate) best = { n, rate };
    }
    return best.n;
  }
}
