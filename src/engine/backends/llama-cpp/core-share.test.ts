import { describe, expect, it } from "vitest";
import { CoreShare, CoreSplit, readCpuTimes, threadsForShare, type CpuTimes } from "./core-share.js";
import { threadsForStep } from "./decode-threads.js";

/** Readings one second apart on a 2-core machine (100 jiffies per core-second). */
function over(idleCores: number, ownCores: number): [CpuTimes, CpuTimes] {
  const before = { wallMs: 0, totalJiffies: 0, idleJiffies: 0, cores: 2, ownMs: 0 };
  return [before, { wallMs: 1000, totalJiffies: 200, idleJiffies: idleCores * 100, cores: 2, ownMs: ownCores * 1000 }];
}

describe("threadsForShare", () => {
  it("keeps every thread on a quiet machine, whether this process is busy or idle", () => {
    expect(threadsForShare(...over(0, 2), 2)).toBe(2);
    expect(threadsForShare(...over(2, 0), 2)).toBe(2);
    expect(threadsForShare(...over(0.1, 1.7), 2)).toBe(2);
  });

  it("drops to one thread when another process keeps a core busy, and stays there", () => {
    // Two spinning threads and a busy loop share two cores: this process gets about 1.33 of them.
    expect(threadsForShare(...over(0, 1.33), 2)).toBe(1);
    expect(threadsForShare(...over(0, 1), 2)).toBe(1);
  });

  it("goes back to every thread once the other process stops", () => {
    expect(threadsForShare(...over(1, 1), 2)).toBe(2);
  });

  it("never goes below one thread or above the maximum", () => {
    expect(threadsForShare(...over(0, 0.1), 4)).toBe(1);
    expect(threadsForShare(...over(2, 0), 1)).toBe(1);
  });

  it("reads this machine's counters", () => {
    const times = readCpuTimes();
    if (process.platform !== "linux") return expect(times).toBeUndefined();
    expect(times?.cores).toBeGreaterThan(0);
    expect(times?.totalJiffies).toBeGreaterThan(times?.idleJiffies ?? Infinity);
    expect(times?.runnable).toBeGreaterThanOrEqual(1);
  });
});

/** A reader that returns `readings` in turn, then nothing. */
const readingsOf = (readings: CpuTimes[]) => () => readings.shift();

describe("CoreShare", () => {
  /** A share that first reads `before`, then `after` (its shares spread over `windowMs`) that much later, now. */
  const shareOver = (windowMs: number, [before, after]: [CpuTimes, CpuTimes], runnable: number) => {
    const now = performance.now();
    const readings = [{ ...before, wallMs: now - windowMs }, { ...after, wallMs: now, ownMs: (after.ownMs * windowMs) / 1000, runnable }];
    return new CoreShare(2, () => readings.shift());
  };

  it("after an idle spell, reads the cores off the tasks runnable now, not the spell's average", () => {
    // Another process kept both cores busy for the last 10 s and has just ended: the machine is quiet now.
    expect(shareOver(10_000, over(0, 0), 1).threads()).toBe(2);
    // The machine was quiet for 10 s, but a busy loop runs now.
    expect(shareOver(10_000, over(2, 0), 2).threads()).toBe(1);
  });

  it("keeps to the measured share over a recent window while another process's task is runnable", () => {
    // A busy loop held a core in the window and is runnable now.
    expect(shareOver(1_000, over(0, 1), 2).threads()).toBe(1);
    // The window was quiet: a task runnable at the moment does not take a core.
    expect(shareOver(1_000, over(2, 0), 3).threads()).toBe(2);
  });

  it("takes back a core another process used in the window when nothing else is runnable now (a client that waits)", () => {
    expect(shareOver(1_000, over(0, 1), 1).threads()).toBe(2);
  });

  it("keeps to the measured share over a long window in which this process worked (a step of several seconds)", () => {
    // Its own two threads had both cores; at the step's end its polling workers still count as runnable.
    expect(shareOver(10_000, over(0, 2), 3).threads()).toBe(2);
    // A busy loop held one core all along, and is runnable at the step's end.
    expect(shareOver(10_000, over(0, 1), 2).threads()).toBe(1);
  });

  it("counts only other processes' runnable tasks, not this process's own threads", () => {
    // Its two polling workers and the reading thread are runnable, nothing else is.
    expect(shareOver(10_000, over(0, 0), 3).threads()).toBe(1);
    const now = performance.now();
    const [before, after] = over(0, 0);
    const readings = [{ ...before, wallMs: now - 10_000 }, { ...after, wallMs: now, runnable: 3, ownRunnable: 3 }];
    expect(new CoreShare(2, () => readings.shift()).threads()).toBe(2);
  });

  it("reads the runnable tasks again while another process's task seems to take a core: a client runs only for a moment", () => {
    const now = performance.now();
    const [before, after] = over(0, 0);
    const spell = { ...before, wallMs: now - 10_000 };
    const moment = (runnable: number) => ({ ...after, wallMs: now, runnable, ownRunnable: 1 });
    // The client woken by the last token is running at the first reading, and gone at the second.
    expect(new CoreShare(2, readingsOf([spell, moment(2), moment(1)])).threads()).toBe(2);
    // A busy loop is runnable at every reading.
    expect(new CoreShare(2, readingsOf([spell, ...Array.from({ length: 6 }, () => moment(2))])).threads()).toBe(1);
  });

  it("starts a new window at a restart, with the threads of that moment", () => {
    // A load's window: the process used 1.57 cores and the kernel's reads for it looked like another process's 0.35.
    const now = performance.now();
    const load = (): [CpuTimes, CpuTimes] => {
      const [before, after] = over(0.08, 1.57);
      return [{ ...before, wallMs: now - 1000 }, { ...after, wallMs: now - 1000 + 1000, runnable: 2, ownRunnable: 2 }];
    };
    // Read a second later, with another process's task runnable at that moment: the load's window decides.
    const [start, end] = load();
    expect(new CoreShare(2, readingsOf([start, { ...end, runnable: 3 }])).threads()).toBe(1);
    // Restarted as the load ends, when only its own threads run: every thread, until the next window says otherwise.
    const restarted = new CoreShare(2, readingsOf([start, end]));
    restarted.restart();
    expect(restarted.threads()).toBe(2);
    // Another process running at that moment takes a core.
    const busy = new CoreShare(2, readingsOf([start, { ...end, runnable: 3, ownRunnable: 1 }]));
    busy.restart();
    expect(busy.threads()).toBe(1);
  });

  it("falls back to the window's share where the runnable count cannot be read", () => {
    const [before, after] = over(0, 0);
    const now = performance.now();
    const readings = [{ ...before, wallMs: now - 10_000 }, { ...after, wallMs: now }];
    expect(new CoreShare(2, () => readings.shift()).threads()).toBe(1);
  });
});

describe("threadsForStep with a core share", () => {
  it("caps every step, prompt batches included, at the cores the process is getting", () => {
    const policy = { threads: 2, minTokensForAllThreads: 0 };
    expect(threadsForStep({ ...policy, cores: () => 1 }, 512)).toBe(1);
    expect(threadsForStep({ ...policy, cores: () => 2 }, 1)).toBe(2);
    expect(threadsForStep(policy, 512)).toBe(2);
  });
});

describe("CoreSplit", () => {
  /** A split of `cores` threads on a machine that gives them all (no /proc readings: the share is the maximum). */
  const split = (cores: number, lane: boolean, busy: boolean) => {
    const result = new CoreSplit(new CoreShare(cores, () => undefined));
    result.besideActive = () => lane;
    result.mainBusy = () => busy;
    return result;
  };

  it("gives either side every core while the other is idle", () => {
    expect(split(2, false, true).mainCores()).toBe(2);
    expect(split(2, true, false).laneCores()).toBe(2);
  });

  it("gives an embedding batch the larger half while the main context serves requests, every core otherwise", () => {
    expect([split(2, true, true).mainCores(), split(2, true, true).embeddingCores()]).toEqual([1, 1]);
    expect([split(5, true, true).mainCores(), split(5, true, true).embeddingCores()]).toEqual([2, 3]);
    expect(split(4, true, false).embeddingCores()).toBe(4);
  });

  it("splits the cores while both work, the larger half to the lane, one at least each", () => {
    expect([split(2, true, true).mainCores(), split(2, true, true).laneCores()]).toEqual([1, 1]);
    expect([split(5, true, true).mainCores(), split(5, true, true).laneCores()]).toEqual([2, 3]);
    expect([split(1, true, true).mainCores(), split(1, true, true).laneCores()]).toEqual([1, 1]);
  });

  /** A split of 2 threads whose share has measured another process holding one of the 2 cores. */
  const contendedSplit = (busy: boolean) => {
    const [before, after] = over(0, 1);
    const now = performance.now();
    const readings = [{ ...before, wallMs: now - 1000 }, { ...after, wallMs: now }];
    const result = Object.assign(new CoreSplit(new CoreShare(2, () => readings.shift())), { busy });
    result.besideActive = () => true;
    result.mainBusy = () => result.busy;
    return result;
  };

  it("grows a lone lane on a contended machine to every thread while its threads get a fair part of a core each", () => {
    const lane = contendedSplit(false);
    // Nothing measured yet: the cores the process gets.
    expect(lane.laneCores()).toBe(1);
    // Its one thread got a whole core (one other process on 2 cores): every thread.
    lane.recordLaneChunk(980, 1000);
    expect(lane.laneCores()).toBe(2);
    // Two threads sharing two cores with that process get two thirds of one each: they stay.
    lane.recordLaneChunk(1330, 1000);
    expect(lane.laneCores()).toBe(2);
    // A machine loaded many times over leaves each a sixth of a core: back to the share, where one thread getting a
    // quarter of a core stays.
    lane.recordLaneChunk(330, 1000);
    expect(lane.laneCores()).toBe(1);
    lane.recordLaneChunk(250, 1000);
    expect(lane.laneCores()).toBe(1);
  });

  it("splits the cores it gets while the main context works too, whatever the lane measured alone", () => {
    const shared = contendedSplit(true);
    shared.recordLaneChunk(1000, 1000);
    expect([shared.mainCores(), shared.laneCores()]).toEqual([1, 1]);
  });

  it("learns nothing from a chunk that began beside the main context's work and ended alone", () => {
    const lane = contendedSplit(true);
    expect(lane.laneCores()).toBe(1);
    lane.busy = false;
    // The process's CPU in that chunk included the main context's thread.
    lane.recordLaneChunk(1900, 1000);
    expect(lane.laneCores()).toBe(1);
  });
});
