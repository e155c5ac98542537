import { describe, expect, it } from "vitest";
import { lazyIterable } from "./lazy-iterable.js";

async function* numbers(log: string[]): AsyncGenerator<number> {
  try {
    yield 1;
    yield 2;
  } finally {
    log.push("closed");
  }
}

describe("lazyIterable", () => {
  it("opens its source on the first next() and yields what it yields", async () => {
    const log: string[] = [];
    const iterable = lazyIterable(async () => {
      log.push("opened");
      return numbers(log);
    });
    expect(log).toEqual([]);
    const iterator = iterable[Symbol.asyncIterator]();
    const first = iterator.next();
    // Opening starts within the first next(), before it returns.
    expect(log).toEqual(["opened"]);
    expect(await first).toEqual({ done: false, value: 1 });
    await iterator.return!();
    log.length = 0;
    const seen: number[] = [];
    for await (const n of iterable) seen.push(n);
    expect(seen).toEqual([1, 2]);
    expect(log).toEqual(["opened", "closed"]);
  });

  it("rejects the first next() with what opening threw, synchronously or not", async () => {
    const sync = lazyIterable<number>(() => { throw new Error("refused"); });
    await expect(sync[Symbol.asyncIterator]().next()).rejects.toThrow("refused");
    const async = lazyIterable<number>(async () => { throw new Error("later"); });
    await expect(async[Symbol.asyncIterator]().next()).rejects.toThrow("later");
  });

  it("closes its source when the consumer leaves early, even while the source is still opening", async () => {
    const log: string[] = [];
    for await (const n of lazyIterable(() => numbers(log))) {
      expect(n).toBe(1);
      break;
    }
    expect(log).toEqual(["closed"]);

    let release!: () => void;
    const gate = new Promise<void>((resolve) => { release = resolve; });
    const opened: string[] = [];
    const iterator = lazyIterable(async () => {
      await gate;
      return numbers(opened);
    })[Symbol.asyncIterator]();
    const first = iterator.next();
    const leaving = iterator.return!();
    release();
    await leaving;
    expect(await first).toEqual({ done: true, value: undefined });
    // The source opened after the consumer left: it was closed, and never ran past its start.
    expect(await iterator.next()).toEqual({ done: true, value: undefined });
  });
});
