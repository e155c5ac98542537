import { describe, expect, it } from "vitest";
import { collectAll as collect } from "../../test/helpers/collect.js";
import { mapStream } from "./map-stream.js";

async function* source(items: number[], log: string[], failAfter?: Error): AsyncGenerator<number> {
  try {
    for (const item of items) yield item;
    if (failAfter) throw failAfter;
  } finally {
    log.push("source closed");
  }
}

describe("mapStream", () => {
  it("maps items, skips those mapped to undefined, adds the end's item and closes once", async () => {
    const log: string[] = [];
    const mapped = mapStream(source([1, 2, 3], log), {
      map: (n) => (n === 2 ? undefined : `<${n}>`),
      end: () => "end",
      close: () => { log.push("stage closed"); },
    });
    expect(await collect(mapped)).toEqual(["<1>", "<3>", "end"]);
    expect(log).toEqual(["source closed", "stage closed"]);
  });

  it("ends after an item that stops it, closing the source", async () => {
    const log: string[] = [];
    const mapped = mapStream(source([1, 2, 3], log), { map: (n, stop) => { if (n === 2) stop(); return n; }, end: () => 99 });
    expect(await collect(mapped)).toEqual([1, 2]);
    expect(log).toEqual(["source closed"]);
  });

  it("turns a failure into its last item, or fails the stream after closing", async () => {
    const log: string[] = [];
    const recovered = mapStream(source([1], log, new Error("boom")), { map: (n) => n, fail: (error) => (error as Error).message.length });
    expect(await collect(recovered)).toEqual([1, 4]);

    const closed: string[] = [];
    const rethrown = mapStream(source([1], log, new Error("boom")), { map: (n) => n, close: () => { closed.push("closed"); } });
    const seen: number[] = [];
    await expect((async () => { for await (const n of rethrown) seen.push(n); })()).rejects.toThrow("boom");
    expect(seen).toEqual([1]);
    expect(closed).toEqual(["closed"]);
  });

  it("closes the source and fails when mapping throws", async () => {
    const log: string[] = [];
    const mapped = mapStream(source([1, 2], log), { map: (n) => { if (n === 2) throw new Error("bad item"); return n; } });
    await expect(collect(mapped)).rejects.toThrow("bad item");
    expect(log).toEqual(["source closed"]);
  });

  it("lets go of the source the stage's way when the consumer leaves early", async () => {
    const log: string[] = [];
    const drained: number[] = [];
    const mapped = mapStream(source([1, 2, 3], log), {
      map: (n) => n,
      // Like the response observer: read the rest for its usage rather than cut it off.
      leave: async (rest) => { for (let next = await rest.next(); !next.done; next = await rest.next()) drained.push(next.value); },
      close: () => { log.push("stage closed"); },
    });
    for await (const n of mapped) {
      expect(n).toBe(1);
      break;
    }
    expect(drained).toEqual([2, 3]);
    expect(log).toEqual(["source closed", "stage closed"]);
  });
});
