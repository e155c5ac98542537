import { describe, expect, it } from "vitest";
import { DecodeBarrier } from "./decode-barrier.js";

/** Tracks whether a promise has settled, after letting pending microtasks run. */
function watch(promise: Promise<void> | undefined): { settled: () => Promise<boolean> } {
  // undefined: released at once.
  let done = promise === undefined;
  void promise?.then(() => { done = true; });
  return { settled: async () => { await Promise.resolve(); await Promise.resolve(); return done; } };
}

describe("DecodeBarrier", () => {
  it("lets a lone member through at once", async () => {
    const barrier = new DecodeBarrier();
    barrier.join();
    expect(barrier.arrive()).toBeUndefined();
  });

  it("holds arrivals until every member has arrived, then releases them together", async () => {
    const barrier = new DecodeBarrier();
    barrier.join();
    barrier.join();
    barrier.join();
    const first = watch(barrier.arrive());
    const second = watch(barrier.arrive());
    expect(await first.settled()).toBe(false);
    expect(await second.settled()).toBe(false);
    expect(barrier.arrived).toBe(2);
    const third = watch(barrier.arrive());
    expect([await first.settled(), await second.settled(), await third.settled()]).toEqual([true, true, true]);
    expect(barrier.arrived).toBe(0);
  });

  it("starts each step afresh: an early arrival for the next step waits for the others again", async () => {
    const barrier = new DecodeBarrier();
    barrier.join();
    barrier.join();
    void barrier.arrive();
    await barrier.arrive();
    const early = watch(barrier.arrive());
    expect(await early.settled()).toBe(false);
    await barrier.arrive();
    expect(await early.settled()).toBe(true);
  });

  it("releases the waiting members when the last one missing leaves", async () => {
    const barrier = new DecodeBarrier();
    barrier.join();
    barrier.join();
    barrier.join();
    const first = watch(barrier.arrive());
    const second = watch(barrier.arrive());
    barrier.leave();
    expect([await first.settled(), await second.settled()]).toEqual([true, true]);
    expect(barrier.size).toBe(2);
  });

  it("waits for a member that joins mid-step", async () => {
    const barrier = new DecodeBarrier();
    barrier.join();
    barrier.join();
    const first = watch(barrier.arrive());
    barrier.join();
    const second = watch(barrier.arrive());
    expect(await first.settled()).toBe(false);
    expect(await second.settled()).toBe(false);
    const third = watch(barrier.arrive());
    expect([await first.settled(), await second.settled(), await third.settled()]).toEqual([true, true, true]);
  });

  it("counts a prefilling member among those waited for but not among the generating ones", async () => {
    const barrier = new DecodeBarrier();
    barrier.join();
    barrier.join(true);
    expect([barrier.size, barrier.generating]).toEqual([2, 1]);
    const generating = watch(barrier.arrive());
    expect(await generating.settled()).toBe(false);
    await barrier.arrive();
    expect(await generating.settled()).toBe(true);
    barrier.finishPrefill();
    expect(barrier.generating).toBe(2);
    barrier.join(true);
    barrier.leave(true);
    expect([barrier.size, barrier.generating]).toEqual([2, 2]);
  });

  it("reports every step it releases, with the time of the step before when that step kept its members", async () => {
    let clock = 0;
    const steps: Array<number | undefined> = [];
    const barrier = new DecodeBarrier((ms) => steps.push(ms), () => clock);
    barrier.join();
    await barrier.arrive(); // the step under way when it joined is not timed
    clock = 20;
    await barrier.arrive();
    clock = 45;
    await barrier.arrive();
    expect(steps).toEqual([undefined, 20, 25]);
    // A member joins: the step it joined in is not timed; the next ones are.
    barrier.join(true);
    clock = 100;
    const chunk = barrier.arrive();
    clock = 160;
    await Promise.all([chunk, barrier.arrive()]);
    clock = 230;
    const next = barrier.arrive();
    await Promise.all([next, barrier.arrive()]);
    expect(steps.slice(3)).toEqual([undefined, 70]);
    barrier.leave(true);
    clock = 250;
    await barrier.arrive(); // the step the member left in
    clock = 270;
    await barrier.arrive();
    expect(steps.slice(5)).toEqual([undefined, 20]);
  });
});
