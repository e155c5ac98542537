import { describe, expect, it } from "vitest";
import { collectAll } from "../../../../test/helpers/collect.js";
import { EventBuffer } from "./event-buffer.js";

const nothingToFinish = async () => {};

function readAll<T>(buffer: EventBuffer<T>): Promise<T[]> {
  return collectAll(buffer.drain(nothingToFinish));
}

describe("EventBuffer", () => {
  it("delivers pushed events in order, including those pushed while the reader waits", async () => {
    const buffer = new EventBuffer<number>(4);
    buffer.push(1);
    const reading = readAll(buffer);
    await Promise.resolve();
    buffer.push(2);
    buffer.push(3);
    buffer.end();
    expect(await reading).toEqual([1, 2, 3]);
  });

  it("is full at capacity and makes room as the reader takes events", async () => {
    const buffer = new EventBuffer<number>(2);
    buffer.push(1);
    buffer.push(2);
    expect(buffer.full).toBe(true);
    let roomMade = false;
    const room = buffer.waitForRoom().then(() => { roomMade = true; });
    const reader = buffer.drain(nothingToFinish)[Symbol.asyncIterator]();
    await Promise.resolve();
    expect(roomMade).toBe(false);
    expect((await reader.next()).value).toBe(1);
    await room;
    expect(buffer.full).toBe(false);
  });

  it("unblocks the producer and drops events once the reader leaves", async () => {
    const buffer = new EventBuffer<number>(1);
    buffer.push(1);
    const room = buffer.waitForRoom();
    buffer.close();
    await room;
    buffer.push(2);
    expect(buffer.closed).toBe(true);
    expect(buffer.full).toBe(false);
  });

  it("rethrows the producer's failure after the events before it", async () => {
    const buffer = new EventBuffer<number>(4);
    buffer.push(1);
    buffer.end({ error: new Error("boom") });
    const seen: number[] = [];
    const finished: string[] = [];
    const drained = buffer.drain(async () => { finished.push(`finished after ${seen.length}`); });
    await expect((async () => { for await (const item of drained) seen.push(item); })()).rejects.toThrow("boom");
    expect(seen).toEqual([1]);
    expect(finished).toEqual(["finished after 1"]);
  });

  it("finishes once, before the end is reported or when the reader leaves early", async () => {
    const ended = new EventBuffer<number>(4);
    let finishes = 0;
    const drained = ended.drain(async () => { finishes++; });
    ended.push(1);
    ended.end();
    expect(await collectAll(drained)).toEqual([1]);
    expect(finishes).toBe(1);

    const left = new EventBuffer<number>(4);
    let leftFinishes = 0;
    left.push(1);
    left.push(2);
    for await (const item of left.drain(async () => { leftFinishes++; })) {
      expect(item).toBe(1);
      break;
    }
    expect(leftFinishes).toBe(1);
  });
});
