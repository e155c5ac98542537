/**
 * Admission and cancellation on the real default model with one sequence and a queue of one: an abort frees the
 * sequence for the next request, a full queue refuses at once, and a queued request that aborts leaves the queue.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createEngine, type Engine, type GenerationEvent } from "../../src/engine/index.js";
import { realModelPath, testThreads } from "../helpers/real-model.js";
import { finishOf, readEvents, userRequest } from "../helpers/stream-events.js";

let engine: Engine;

beforeAll(async () => {
  engine = await createEngine({ models: [{ id: "smollm2-135m", path: realModelPath() }], parallel: 1, queue: 1, ctxSize: 1024, threads: testThreads() });
});

afterAll(async () => {
  await engine?.close();
});

const longRequest = (signal?: AbortSignal) => engine.generate(userRequest("smollm2-135m", "Count from one to one hundred in words.", { maxTokens: 32 }), { signal });

describe("cancellation", () => {
  it("stops an aborted generation within a step and frees the sequence for the next request", async () => {
    const controller = new AbortController();
    const events: GenerationEvent[] = [];
    for await (const event of longRequest(controller.signal)) {
      events.push(event);
      if (event.type === "text-delta") controller.abort();
    }
    const finish = finishOf(events);
    expect(finish.reason).toBe("aborted");
    expect(finish.usage.outputTokens).toBeLessThan(32);
    expect(engine.stats().activeSequences).toBe(0);
    const next = await readEvents(engine.generate(userRequest("smollm2-135m", "Say hi.", { maxTokens: 4 })));
    expect(["stop", "length"]).toContain(finishOf(next).reason);
  });

  it("frees the sequence when the consumer stops reading", async () => {
    for await (const event of longRequest()) if (event.type === "text-delta") break;
    expect(engine.stats().activeSequences).toBe(0);
    const next = await readEvents(engine.generate(userRequest("smollm2-135m", "Say hi.", { maxTokens: 4 })));
    expect(finishOf(next).usage.outputTokens).toBeGreaterThan(0);
  });
});

describe("queue", () => {
  it("refuses at once when the queue is full, and drops a queued request whose signal aborts", async () => {
    const running = longRequest()[Symbol.asyncIterator]();
    expect((await running.next()).value).toMatchObject({ type: "start" });

    const queuedAbort = new AbortController();
    const queued = longRequest(queuedAbort.signal)[Symbol.asyncIterator]().next();
    expect(engine.stats()).toMatchObject({ activeSequences: 1, queueDepth: 1 });

    await expect(longRequest()[Symbol.asyncIterator]().next()).rejects.toMatchObject({ code: "overloaded", details: { retryAfter: expect.any(Number) } });

    queuedAbort.abort();
    await expect(queued).rejects.toMatchObject({ code: "aborted" });
    expect(engine.stats().queueDepth).toBe(0);

    await running.return?.(undefined);
    expect(engine.stats().activeSequences).toBe(0);
  });
});
