/**
 * What a decode step costs on the hardware it runs on, as a line rather than a ratio:
 *
 *   ms = fixed + perToken × tokens + perTokenPerKDepth × tokens × depth / 1000
 *
 * `fixed` is what a step costs whatever it holds (graph build, kernel launches, the host's work per step); it is
 * most of a step on a GPU, where 1 and 200 tokens cost about the same, and little of one on a CPU. `perToken` is the
 * matrix work per token, and the depth term the attention over what the sequence already holds (a token 16k deep
 * costs several times one at the start of a prompt). A ratio (ms ÷ tokens) learnt from small steps calls a GPU slow
 * and keeps its chunks small, so the same load ran at different speeds depending on what ran before; a line fitted
 * over steps of different sizes separates the two parts.
 *
 * The fit is least squares over the recent steps (older ones fade by FADE per step, so it follows a machine whose
 * load changes), pulled gently towards a prior so that it is defined before steps of different sizes have been
 * seen. The prior is a measurement at load (calibrate in step-planner.ts) or, before one, a guess by device.
 */

/** Where a model's layers run, for the cost model's starting guess before anything is measured. */
export type StepDevice = "cpu" | "gpu";

/** Guesses replaced by the first measurement; a GPU step is mostly its fixed part, a CPU step mostly its tokens. */
export const DEVICE_PRIOR: Record<StepDevice, StepCostParts> = {
  cpu: { fixed: 2, perToken: 1, perTokenPerKDepth: 0.08 },
  gpu: { fixed: 5, perToken: 0.02, perTokenPerKDepth: 0.002 },
};

/** A step's contents: the tokens it evaluated and the attention depth of its prompt tokens. */
export interface StepShape {
  tokens: number;
  /** Σ over the step's prompt tokens of the depth each is evaluated at, in thousands of tokens. */
  kiloDepthTokens?: number;
}

/** The three parts of a step's cost, in milliseconds. */
export interface StepCostParts {
  fixed: number;
  perToken: number;
  perTokenPerKDepth: number;
}

/** Weight a step keeps per later step (about the last 30 steps count). */
const FADE = 0.97;
/**
 * How many steps' worth of evidence the prior counts as, each part at the scale of a 64-token step: steps of one or
 * two tokens (decoding alone) move the fixed part and leave the per-token part to the prior, while a few steps of
 * different sizes outweigh it.
 */
const PRIOR_WEIGHT = 0.1;
const PRIOR_SCALE = [1, 64, 64];
/** No part is ever fitted below this share of its prior (a noisy step never makes tokens free). */
const FLOOR_SHARE = 0.05;
/**
 * A step slower than this many times its prediction counts as this many. A least-squares fit follows its largest
 * errors, so one stall would otherwise set the line for the next thirty steps: on an H100, llama.cpp's Vulkan backend
 * compiled the pipelines of a first long prompt's shapes inside one step (8–10 s with the GPU idle), and the rest of
 * that prompt went in chunks near their floor: 46 steps for 7,463 tokens instead of 15. A lasting slowdown (another
 * process taking a core) still moves the line within a few steps, each raising the prediction the next is held to.
 */
const OUTLIER_FACTOR = 3;

export class StepCostModel {
  // Weighted normal equations A·θ = b over the features [1, tokens, kiloDepthTokens].
  private a = [[0, 0, 0], [0, 0, 0], [0, 0, 0]];
  private b = [0, 0, 0];
  private fitted: StepCostParts;

  constructor(private prior: StepCostParts) {
    this.fitted = prior;
  }

  get parts(): StepCostParts { return this.fitted; }

  /** Replaces the prior (a measurement) and forgets the steps seen so far. */
  reset(prior: StepCostParts): void {
    this.prior = prior;
    this.a = [[0, 0, 0], [0, 0, 0], [0, 0, 0]];
    this.b = [0, 0, 0];
    this.fitted = prior;
  }

  /** The predicted cost of a step. */
  ms(shape: StepShape): number {
    const { fixed, perToken, perTokenPerKDepth } = this.fitted;
    return fixed + perToken * shape.tokens + perTokenPerKDepth * (shape.kiloDepthTokens ?? 0);
  }

  /** What one more prompt token costs at `depth`. */
  marginalMs(depth: number): number {
    return this.fitted.perToken + (this.fitted.perTokenPerKDepth * depth) / 1000;
  }

  /** Records a step that took `ms` (at most OUTLIER_FACTOR times what it was expected to take). */
  observe(shape: StepShape, ms: number): void {
    if (!(ms > 0) || !(shape.tokens > 0)) return;
    const seen = Math.min(ms, OUTLIER_FACTOR * this.ms(shape));
    const x = [1, shape.tokens, shape.kiloDepthTokens ?? 0];
    for (let i = 0; i < 3; i++) {
      this.b[i] = FADE * this.b[i]! + x[i]! * seen;
      for (let j = 0; j < 3; j++) this.a[i]![j] = FADE * this.a[i]![j]! + x[i]! * x[j]!;
    }
    this.fitted = this.solve();
  }

  /** Ridge regression towards the prior, so a part the steps say nothing about keeps its prior value. */
  private solve(): StepCostParts {
    const p = [this.prior.fixed, this.prior.perToken, this.prior.perTokenPerKDepth];
    const pull = PRIOR_SCALE.map((scale) => PRIOR_WEIGHT * scale * scale);
    const m = this.a.map((row, i) => row.map((v, j) => v + (i === j ? pull[i]! : 0)));
    const v = this.b.map((v, i) => v + pull[i]! * p[i]!);
    const theta = solve3(m, v) ?? p;
    return {
      fixed: Math.max(theta[0]!, FLOOR_SHARE * p[0]!, 0),
      perToken: Math.max(theta[1]!, FLOOR_SHARE * p[1]!),
      perTokenPerKDepth: Math.max(theta[2]!, FLOOR_SHARE * p[2]!, 0),
    };
  }
}

/** Solves a 3×3 system by Gaussian elimination with partial pivoting; undefined when it is singular. */
function solve3(matrix: number[][], vector: number[]): number[] | undefined {
  const m = matrix.map((row, i) => [...row, vector[i]!]);
  for (let col = 0; col < 3; col++) {
    let pivot = col;
    for (let row = col + 1; row < 3; row++) if (Math.abs(m[row]![col]!) > Math.abs(m[pivot]![col]!)) pivot = row;
    if (Math.abs(m[pivot]![col]!) < 1e-12) return undefined;
    [m[col], m[pivot]] = [m[pivot]!, m[col]!];
    for (let row = 0; row < 3; row++) {
      if (row === col) continue;
      const factor = m[row]![col]! / m[col]![col]!;
      for (let k = col; k < 4; k++) m[row]![k]! -= factor * m[col]![k]!;
    }
  }
  return m.map((row, i) => row[3]! / row[i]!);
}
