import { describe, expect, it } from "vitest";
import type { LlamaContext, LlamaContextSequence } from "node-llama-cpp";
import { StepInterrupter } from "./step-interrupter.js";

/** node-llama-cpp's native batch methods, recording the interrupt flag each step decodes under (the real ones: test/engine/chunked-prefill.test.ts). */
function fakeContext() {
  const flags: boolean[] = [];
  let interrupt = false;
  let finishStep: () => void = () => {};
  const native = {
    initBatch: (_size: number) => {},
    addToBatch: (_id: number, _first: number, tokens: Uint32Array) => tokens,
    decodeBatch: () => new Promise<void>((resolve) => { finishStep = resolve; }),
  };
  const steps = StepInterrupter.attach({ _ctx: native } as unknown as LlamaContext, (on) => { interrupt = on; flags.push(on); });
  const step = (ids: number[]) => {
    native.initBatch(ids.length);
    for (const id of ids) native.addToBatch(id, 0, new Uint32Array(1));
    const done = native.decodeBatch();
    return { done, finish: () => finishStep() };
  };
  return { steps: steps!, step, flags, interrupted: () => interrupt };
}

const sequence = (id: number) => ({ _sequenceId: id }) as unknown as LlamaContextSequence;

describe("StepInterrupter", () => {
  it("stops a step in flight whose only sequence is abandoned, and clears the flag when it ends", async () => {
    const { steps, step, interrupted } = fakeContext();
    const running = step([3]);
    steps.abandon(sequence(3));
    expect(interrupted()).toBe(true);
    running.finish();
    await running.done;
    expect(interrupted()).toBe(false);
  });

  it("never stops a step another sequence's tokens share", async () => {
    const { steps, step, flags } = fakeContext();
    const running = step([3, 1]);
    steps.abandon(sequence(3));
    running.finish();
    await running.done;
    expect(flags).toEqual([false]);
  });

  it("stops an abandoned sequence's next step at once, until the sequence is taken again", async () => {
    const { steps, step, flags } = fakeContext();
    steps.abandon(sequence(2));
    const first = step([2]);
    first.finish();
    await first.done;
    steps.forget(sequence(2));
    const second = step([2]);
    second.finish();
    await second.done;
    expect(flags).toEqual([true, false, false]);
  });
});
