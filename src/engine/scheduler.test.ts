import { describe, expect, it } from "vitest";
import { Scheduler } from "./scheduler.js";

describe("Scheduler", () => {
  it("runs up to parallel at once and admits waiters in FIFO order", async () => {
    const scheduler = new Scheduler({ model: "m", parallel: 2, queue: 8 });
    const first = await scheduler.admit();
    await scheduler.admit();
    const admitted: number[] = [];
    const waiting = [1, 2, 3].map((n) => scheduler.admit().then((permit) => { admitted.push(n); return permit; }));
    expect(scheduler.queueDepth).toBe(3);
    expect(scheduler.activeCount).toBe(2);
    first.release();
    first.release();
    const one = await waiting[0];
    one?.release();
    await waiting[1];
    expect(admitted).toEqual([1, 2]);
    expect(scheduler.queueDepth).toBe(1);
    expect(scheduler.activeCount).toBe(2);
  });

  it("refuses at once with a retry hint when the queue is full", async () => {
    const scheduler = new Scheduler({ model: "m", parallel: 1, queue: 1, retryAfter: 3 });
    await scheduler.admit();
    void scheduler.admit();
    await expect(scheduler.admit()).rejects.toMatchObject({ code: "overloaded", details: { retryAfter: 3 } });
  });

  it("drops a queued request whose signal aborts, and refuses one already aborted", async () => {
    const scheduler = new Scheduler({ model: "m", parallel: 1, queue: 4 });
    const running = await scheduler.admit();
    const controller = new AbortController();
    const queued = scheduler.admit(controller.signal);
    const after = scheduler.admit();
    controller.abort();
    await expect(queued).rejects.toMatchObject({ code: "aborted" });
    expect(scheduler.queueDepth).toBe(1);
    running.release();
    await expect(after).resolves.toBeDefined();
    await expect(scheduler.admit(AbortSignal.abort())).rejects.toMatchObject({ code: "aborted" });
  });

  it("rejects waiters when closed", async () => {
    const scheduler = new Scheduler({ model: "m", parallel: 1, queue: 4 });
    await scheduler.admit();
    const queued = scheduler.admit();
    scheduler.close();
    await expect(queued).rejects.toMatchObject({ code: "overloaded" });
  });
});
