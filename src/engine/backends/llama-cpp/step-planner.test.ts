import { describe, expect, it } from "vitest";
import { LOOP_STEP_MS, LOOP_STREAMS, MAX_STEP_TOKENS, MIN_PROMPT_TOKENS, StepPlanner, STEP_LIMIT_MS, type StepDevice } from "./step-planner.js";
import { partsFromCalibration } from "./calibrate-steps.js";
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

  it("fills a GPU step beside the generating sequences up to the batch: a step costs about the same for 1 or 500 tokens", () => {
    const planner = plannerAfter("gpu", gpu, varied);
    expect(planner.budget(8, 0)).toBe(MAX_STEP_TOKENS - 8);
    expect(planner.budget(64, 16000)).toBe(MAX_STEP_TOKENS - 64);
  });

  it("fills a CPU step with prompt tokens up to the batch, or the step limit on a slower machine", () => {
    // 8 tokens cost 16.5 ms and 2 ms a token: the batch binds before the limit.
    expect(plannerAfter("cpu", cpu, varied).budget(8, 0)).toBe(MAX_STEP_TOKENS - 8);
    // At 5 ms a token the limit binds: (2000 − 40.5) ms beside 8 streams, (2000 − 0.5) ms alone (the fit is pulled a
    // little towards its prior).
    const slower = plannerAfter("cpu", { ...cpu, perToken: 5 }, varied);
    expect(slower.budget(8, 0)).toBeCloseTo((STEP_LIMIT_MS - 40.5) / 5, -1);
    expect(slower.budget(0, 0)).toBeCloseTo((STEP_LIMIT_MS - 0.5) / 5, -1);
  });

  it("gives the same budget whatever ran before: one client's prompts and tokens, or many clients' short prompts", () => {
    // One client: a 245-token prompt alone, then its tokens one by one.
    const oneClient = Array.from({ length: 300 }, (_, i) => (i % 100 === 0 ? 245 : 1));
    // Eight clients with short prompts: eight tokens a step, and now and then a 64-token prompt beside them.
    const shortPrompts = Array.from({ length: 300 }, (_, i) => (i % 10 === 0 ? 72 : 8));
    const slowCpu = { ...cpu, perToken: 8 };
    for (const [device, truth] of [["gpu", gpu], ["cpu", slowCpu]] as const) {
      const after = [oneClient, shortPrompts].map((history) => plannerAfter(device, truth, history).budget(8, 0));
      expect(Math.abs(after[0]! - after[1]!) / after[1]!).toBeLessThan(0.1);
    }
  });

  it("keeps its chunks after a one-off stall, and follows a lasting slowdown within a few steps", () => {
    // An 8,000-token prompt alone on a GPU, whose backend compiles the pipelines of its shapes inside its fifth step
    // (9 s). Without the cap on what one step counts for, the chunks fell to 128 for the next 30 steps.
    const chunks = (stallAt?: number) => {
      const planner = new StepPlanner({ device: "gpu", generating: () => 0 });
      planner.calibrated(gpu);
      const ticket = planner.enqueue(8000, 0);
      const sizes: number[] = [];
      planner.stepStarted(undefined);
      while (ticket.remaining > 0) {
        const tokens = planner.take(ticket);
        const depth = sizes.reduce((a, b) => a + b, 0);
        sizes.push(tokens);
        const ms = gpu.fixed + gpu.perToken * tokens + (gpu.perTokenPerKDepth * tokens * (depth + tokens / 2)) / 1000;
        planner.stepStarted(sizes.length - 1 === stallAt ? 9000 : ms);
      }
      return sizes;
    };
    expect(chunks(4)).toEqual(chunks());
    expect(chunks()).toHaveLength(16);
    // A CPU slowed down for good, every step now five times as long (past the cap): within 25 steps the budget is as
    // low as for a planner that only ever saw slow steps (the floor of MIN_PROMPT_TOKENS), as without the cap.
    const slow = { ...cpu, perToken: 5 };
    let generating = 0;
    const planner = new StepPlanner({ device: "cpu", generating: () => generating });
    planner.calibrated(slow);
    for (const [k, tokens] of [...varied, ...varied.slice(0, 25)].entries()) {
      generating = tokens;
      planner.stepStarted(undefined);
      planner.stepStarted((k < varied.length ? 1 : 5) * (slow.fixed + slow.perToken * tokens));
    }
    expect(planner.budget(0, 0)).toBe(MIN_PROMPT_TOKENS);
  });

  it("holds at least 128 prompt tokens in a step, and more deep in a prompt, however slow the machine", () => {
    const slow = plannerAfter("cpu", { ...cpu, perToken: 20 }, varied);
    expect(slow.budget(0, 0)).toBe(MIN_PROMPT_TOKENS);
    expect(slow.budget(0, 8192)).toBe(256);
    expect(slow.budget(0, 19000)).toBe(512);
    // Never past the batch: 400 generating sequences leave 112 places.
    expect(slow.budget(400, 0)).toBe(MAX_STEP_TOKENS - 400);
  });

  it("hands a step's budget to the oldest request first; a later one waits, or gets what is left", () => {
    const planner = plannerAfter("cpu", cpu, [...varied, 4]);
    planner.stepStarted(undefined);
    const budget = planner.budget(4, 0);
    const first = planner.enqueue(budget - 10, 0);
    const second = planner.enqueue(200, 0);
    // The second asks first: the first still gets its share.
    expect(planner.take(second)).toBe(10);
    expect(planner.take(first)).toBe(budget - 10);
    const late = planner.enqueue(300, 0);
    expect(planner.take(late)).toBe(0);
    planner.finish(first);
    planner.stepStarted(undefined);
    const next = planner.budget(4, 0);
    expect(planner.take(late)).toBe(Math.min(300, Math.max(0, next - 190)));
    expect(planner.take(second)).toBe(Math.min(190, next));
  });

  it("gives a request arriving at an idle model a step of its own, not what the last prompt's step left", () => {
    let generating = 0;
    const planner = new StepPlanner({ device: "gpu", generating: () => generating });
    planner.stepStarted(undefined);
    // A lone prompt's last 200 tokens go in with its first token; it then generates one token and is done.
    const done = planner.enqueue(200, 7680);
    expect(planner.take(done)).toBe(200);
    planner.finish(done);
    // Nothing generates, nothing waits: the next prompt's first chunk is a whole step.
    const next = planner.enqueue(7880, 0);
    expect(planner.take(next)).toBe(MAX_STEP_TOKENS);
    planner.finish(next);
    // Beside a generating sequence, a step under way keeps its accounts: a late prompt gets what is left of it.
    generating = 1;
    planner.stepStarted(undefined);
    const first = planner.enqueue(300, 0);
    expect(planner.take(first)).toBe(300);
    const late = planner.enqueue(7880, 0);
    expect(planner.take(late)).toBe(MAX_STEP_TOKENS - 1 - 300);
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

  it("decodes a step on the event loop's thread only on a CPU, for a few streams, when measured and expected short", () => {
    // 0.5 ms + 2 ms a token: a lone stream's token is short, a prompt is not.
    const measured = plannerAfter("cpu", cpu, [...varied, 1]);
    expect(measured.onLoop(1)).toBe(true);
    expect(measured.onLoop(230)).toBe(false);
    // A few streams too; more than LOOP_STREAMS stay in the work item, however short their step.
    expect(plannerAfter("cpu", cpu, [...varied, LOOP_STREAMS]).onLoop(LOOP_STREAMS)).toBe(true);
    expect(plannerAfter("cpu", cpu, [...varied, LOOP_STREAMS + 1]).onLoop(LOOP_STREAMS + 1)).toBe(false);
    // Nothing measured yet (the cost model's prior may be another machine's), or a GPU: never.
    expect(new StepPlanner({ device: "cpu", generating: () => 1 }).onLoop(1)).toBe(false);
    expect(plannerAfter("gpu", gpu, varied).onLoop(1)).toBe(false);
    // The latest step took longer than the limit (tokens deep in a long context cost more than the model says): no.
    const deep = new StepPlanner({ device: "cpu", generating: () => 1 });
    deep.stepStarted(undefined);
    deep.stepStarted(5);
    expect(deep.onLoop(1)).toBe(true);
    deep.stepStarted(LOOP_STEP_MS + 30);
    expect(deep.onLoop(1)).toBe(false);
    // A step whose contents changed is not measured, and leaves the latest measurement in place.
    deep.stepStarted(undefined);
    expect(deep.onLoop(1)).toBe(false);
    // Another model or the prefill lane computing beside it: no.
    let alone = true;
    const shared = new StepPlanner({ device: "cpu", generating: () => 1, alone: () => alone });
    shared.stepStarted(undefined);
    shared.stepStarted(5);
    expect(shared.onLoop(1)).toBe(true);
    alone = false;
    expect(shared.onLoop(1)).toBe(false);
  });

  it("copies a cached prefix when evaluating its tokens costs more than the copy and the step that performs it", () => {
    // 2 CPU cores, the default model: 0.9 ms a step and 2.7 ms a prompt token, a copy of its 1k-token stream 4 ms.
    const cpuPlanner = new StepPlanner({ device: "cpu", generating: () => 0 });
    cpuPlanner.calibrated({ fixed: 0.9, perToken: 2.7, perTokenPerKDepth: 0.2 }, 4);
    expect(cpuPlanner.prefixCopy(25, 358)).toBe("stream");
    expect(cpuPlanner.prefixCopy(1, 358)).toBeUndefined();
    // A GPU: a step costs 5 ms however many tokens it holds; a chat template's opening is not worth a copy, a coding
    // agent's system prompt is.
    const gpuPlanner = new StepPlanner({ device: "gpu", generating: () => 0 });
    gpuPlanner.calibrated({ fixed: 5, perToken: 0.02, perTokenPerKDepth: 0.002 }, 1);
    expect(gpuPlanner.prefixCopy(25, 358)).toBeUndefined();
    expect(gpuPlanner.prefixCopy(10_000, 12_000)).toBe("stream");
    // Copying a long context per sequence costs more than a short prefix saves, even on a CPU.
    const bigStreams = new StepPlanner({ device: "cpu", generating: () => 0 });
    bigStreams.calibrated({ fixed: 5, perToken: 10, perTokenPerKDepth: 0.5 }, 250);
    expect(bigStreams.prefixCopy(20, 300)).toBeUndefined();
    expect(bigStreams.prefixCopy(30, 300)).toBe("stream");
    // Before a measurement: from 64 tokens.
    const unmeasured = new StepPlanner({ device: "cpu", generating: () => 0 });
    expect(unmeasured.prefixCopy(63, 100)).toBeUndefined();
    expect(unmeasured.prefixCopy(64, 100)).toBe("stream");
  });

  it("copies by cells what the donor holds when that moves less than its stream, and then from fewer tokens", () => {
    // The default model's 8,192-cell sequences on 2 CPU cores: a stream copy took 20 ms, a prompt token 2.7 ms.
    const planner = new StepPlanner({ device: "cpu", generating: () => 0, cellsPerSequence: 8192 });
    planner.calibrated({ fixed: 0.9, perToken: 2.7, perTokenPerKDepth: 0.2 }, 20);
    // A chat template's opening held by a short conversation: its 110 cells move twice, ~0.5 ms.
    expect(planner.prefixCopy(17, 110)).toBe("cells");
    expect(planner.prefixCopy(2, 110)).toBe("cells");
    // By stream the same copy costs 20 ms and a step: worth it for 17 tokens, not for 2.
    const streamsOnly = new StepPlanner({ device: "cpu", generating: () => 0 });
    streamsOnly.calibrated({ fixed: 0.9, perToken: 2.7, perTokenPerKDepth: 0.2 }, 20);
    expect(streamsOnly.prefixCopy(17, 110)).toBe("stream");
    expect(streamsOnly.prefixCopy(2, 110)).toBeUndefined();
    // A donor holding most of its sequence moves more by cells (out and in) than its stream once.
    expect(planner.prefixCopy(17, 8000)).toBe("stream");
  });

  it("moves a slot's cache when the copy by cells costs less than the passes over the weights it spares", () => {
    // A one-token step of the default model on 2 CPU cores: 0.9 + 2.7 ms; sixteen of them: 58 ms.
    const planner = new StepPlanner({ device: "cpu", generating: () => 0, cellsPerSequence: 8192 });
    planner.calibrated({ fixed: 0.9, perToken: 2.7, perTokenPerKDepth: 0.2 }, 20);
    expect(planner.movePays(930)).toBe(true);
    expect(planner.movePays(8000)).toBe(true);
    // Moving nearly a whole 21,504-cell sequence of a 1.5B model (its stream copied in 114 ms), out and in, costs more
    // than 16 of its 12 ms one-token steps spare; 2,000 cells do not.
    const coder = new StepPlanner({ device: "cpu", generating: () => 0, cellsPerSequence: 21_504 });
    coder.calibrated({ fixed: 2, perToken: 10, perTokenPerKDepth: 0.5 }, 114);
    expect(coder.movePays(2000)).toBe(true);
    expect(coder.movePays(21_000)).toBe(false);
    // Without copies by cells (a GPU), never.
    const gpu = new StepPlanner({ device: "gpu", generating: () => 0 });
    gpu.calibrated({ fixed: 5, perToken: 0.02, perTokenPerKDepth: 0.002 }, 15);
    expect(gpu.movePays(100)).toBe(false);
  });
});
