import { describe, expect, it } from "vitest";
import { CoreBudget } from "./core-budget.js";
import { CoreSplit, type CpuTimes } from "./core-share.js";

/** A budget on a machine that gives the process all its cores (no /proc readings: the share is the maximum). */
const budget = (cores: number) => new CoreBudget(cores, () => undefined);

describe("CoreBudget", () => {
  it("gives a model every core while nothing else of the process works", () => {
    const shared = budget(2);
    const serving = shared.join();
    serving.loaded(() => true);
    const idle = shared.join();
    idle.loaded(() => false);
    expect(serving.threads()).toBe(2);
    expect(serving.shared()).toBe(false);
  });

  it("splits the cores with a load in progress, then with the loaded model while it serves", () => {
    const shared = budget(2);
    const serving = shared.join();
    serving.loaded(() => true);
    const loading = shared.join();
    expect([serving.threads(), loading.threads()]).toEqual([1, 1]);
    expect(serving.shared()).toBe(true);
    let busy = true;
    loading.loaded(() => busy);
    expect([serving.threads(), loading.threads()]).toEqual([1, 1]);
    busy = false;
    expect([serving.threads(), loading.threads()]).toEqual([2, 1]);
  });

  it("reads the cores afresh when a load ends: the load's window does not describe the machine after it", () => {
    // Readings: at the budget's start; as the load ends, a second later (it used 1.57 cores, and the kernel's reads for
    // it look like another process's third of a core; a client's task is runnable at that moment); and 0.6 s later,
    // the model's first prompt using both cores.
    const now = performance.now();
    const readings: CpuTimes[] = [
      { wallMs: now - 1600, totalJiffies: 0, idleJiffies: 0, cores: 2, ownMs: 0 },
      { wallMs: now - 600, totalJiffies: 200, idleJiffies: 8, cores: 2, ownMs: 1570, runnable: 3, ownRunnable: 2 },
      { wallMs: now, totalJiffies: 320, idleJiffies: 10, cores: 2, ownMs: 2720, runnable: 2, ownRunnable: 2 },
    ];
    const shared = new CoreBudget(2, () => readings.shift());
    const model = shared.join();
    model.loaded(() => true);
    expect(model.threads()).toBe(2);
  });

  it("gives the cores back when a load fails or a model unloads", () => {
    const shared = budget(4);
    const serving = shared.join();
    serving.loaded(() => true);
    const [failed, other] = [shared.join(), shared.join()];
    expect(serving.threads()).toBe(1);
    failed.leave();
    expect(serving.threads()).toBe(2);
    other.loaded(() => true);
    other.leave();
    expect(serving.threads()).toBe(4);
  });

  it("never gives a model less than one thread", () => {
    const shared = budget(2);
    const models = [shared.join(), shared.join(), shared.join()];
    expect(models.map((model) => model.threads())).toEqual([1, 1, 1]);
  });

  it("keeps a model's prefill lane to the model's part, however much the lane measured alone", () => {
    const shared = budget(2);
    const cores = shared.join();
    cores.loaded(() => true);
    const split = new CoreSplit(cores);
    split.besideActive = () => true;
    split.recordLaneChunk(1000, 1000);
    expect(split.laneCores()).toBe(2);
    shared.join();
    // A lane chunk beside another model's work says nothing of the lane's threads, and the lane keeps to one core.
    split.recordLaneChunk(1900, 1000);
    expect(split.laneCores()).toBe(1);
  });
});
