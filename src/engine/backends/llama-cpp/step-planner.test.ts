import { describe, expect, it } from "vitest";
import { MAX_STEP_TOKENS, partsFromCalibration, StepPlanner, type StepDevice } from "./step-planner.js";
import type { StepCostParts } from "./step-cost.js";

/** A planner whose steps cost what `truth` says, fed `steps` of the given token counts (decoding sequences). */
function plannerAfter(device: StepDevice, truth: StepCostParts, steps: number[]): StepPlanner {
  let generating = 0;
  const planner = new StepPlanner({ device, generating: () => generating });
  planner.stepStarted(undefined);
  for (const tokens of steps) {
    generating = tokens;
    planner.stepStarted(undefined);
    planner.stepStarted(truth.fixed + truth.perToken * tokens);
  }
  return planner;
}

/** Steps of many sizes, as a server sees them. */
const varied = Array.from({ length: 40 }, (_, i) => [1, 8, 32, 8, 64, 16, 1, 128][i % 8]!);

const gpu: StepCostParts = { fixed: 10, perToken: 0.01, perTokenPerKDepth: 0.001 };
const cpu: StepCostParts = { fixed: 0.5, perToken: 2, perTokenPerKDepth: 0.2 };

describe("StepPlanner", () => {
  it("fits a step's fixed and per-token parts from steps of different sizes", () => {
    const planner = plannerAfter("gpu", gpu, [1, 8, 1, 32, 8, 64, 1, 8]);
    expect(planner.cost.parts.fixed).toBeCloseTo(10, 0);
    expect(planner.cost.parts.perToken).toBeCloseTo(0.01, 2);
  });

  it("fills a GPU step beside the generating sequences nearly up to the batch: a step costs about the same for 1 or 500 tokens", () => {
    const planner = plannerAfter("gpu", gpu, varied);
    expect(planner.budget(8, 0)).toBeGreaterThan(0.9 * (MAX_STEP_TOKENS - 8)); // half of a 10 ms step at 0.01 ms a token
  });

  it("lets each waiting request stretch a CPU step beside generating sequences by half of it", () => {
    const planner = plannerAfter("cpu", cpu, varied);
    expect(planner.budget(8, 0)).toBe(4); // half of their 16.5 ms step at 2 ms per token
    expect(planner.budget(8, 0, 3)).toBe(12); // three requests waiting
    expect(planner.budget(200, 0)).toBe(100); // their step 400 ms: half of it
  });

  it("gives the same budget whatever ran before: one client's prompts and tokens, or many clients' short prompts", () => {
    // One client: a 245-token prompt alone, then its tokens one by one.
    const oneClient = Array.from({ length: 300 }, (_, i) => (i % 100 === 0 ? 245 : 1));
    // Eight clients with short prompts: eight tokens a step, and now and then a 64-token prompt beside them.
    const shortPrompts = Array.from({ length: 300 }, (_, i) => (i % 10 === 0 ? 72 : 8));
    for (const [device, truth] of [["gpu", gpu], ["cpu", cpu]] as const) {
      const after = [oneClient, shortPrompts].map((history) => plannerAfter(device, truth, history).budget(8, 0));
      expect(Math.abs(after[0]! - after[1]!) / after[1]!).toBeLessThan(0.1);
    }
  });

  it("sizes a step of prompt tokens alone to about half a second, at least 128 tokens and more deep in a prompt", () => {
    const planner = plannerAfter("cpu", cpu, varied);
    expect(planner.budget(0, 0)).toBeCloseTo(250, -1); // (500 − 0.5) ms at 2 ms per token
    const slow = plannerAfter("cpu", { ...cpu, perToken: 20 }, varied);
    expect(slow.budget(0, 0)).toBe(128);
    expect(slow.budget(0, 8192)).toBe(256);
    expect(slow.budget(0, 19000)).toBe(512);
  });

  it("hands a step's budget to the oldest request first; a later one waits, or gets what is left", () => {
    const planner = plannerAfter("cpu", cpu, [...varied, 4]);
    planner.stepStarted(undefined);
    const budget = planner.budget(4, 0, 2); // two requests waiting
    const first = planner.enqueue(budget - 10, 0);
    const second = planner.enqueue(200, 0);
    // The second asks first: the first still gets its share.
    expect(planner.take(second)).toBe(10);
    expect(planner.take(first)).toBe(budget - 10);
    const late = planner.enqueue(300, 0);
    expect(planner.take(late)).toBe(0);
    planner.finish(first);
    planner.stepStarted(undefined);
    const next = planner.budget(4, 0, 2); // the second and the late one
    expect(planner.take(late)).toBe(Math.max(0, next - 190));
    expect(planner.take(second)).toBe(Math.min(190, next));
  });

  it("gives a context of one sequence whole batches: nothing can share its steps", () => {
    const planner = new StepPlanner({ device: "cpu", soleSequence: true, generating: () => 0 });
    expect(planner.budget(0, 0)).toBe(MAX_STEP_TOKENS);
  });

  it("reads a calibration as the line through a step of many tokens and a step of one", () => {
    const parts = partsFromCalibration({ tokens: 256, manyMs: 12.55, oneMs: 10 }, "gpu");
    expect(parts.perToken).toBeCloseTo(0.01, 3);
    expect(parts.fixed).toBeCloseTo(9.99, 2);
    // Noise that makes the large step look cheaper than the small one never makes a token free.
    expect(partsFromCalibration({ tokens: 64, manyMs: 9, oneMs: 10 }, "cpu").perToken).toBeGreaterThan(0);
  });
});
