import { describe, expect, it } from "vitest";
import { EngineError, type GenerationEvent } from "../engine/index.js";
import { createResponseObserver } from "./response-observer.js";

/** A clock that advances 10 ms per reading, so every timing is a known multiple of 10. */
function steppingClock(): () => number {
  let now = 0;
  return () => (now += 10);
}

async function* replay(events: GenerationEvent[], failure?: Error): AsyncGenerator<GenerationEvent> {
  yield* events;
  if (failure) throw failure;
}

async function drain(events: AsyncIterable<GenerationEvent>): Promise<void> {
  for await (const _ of events);
}

const start = (inputTokens: number, cachedInputTokens = 0): GenerationEvent => ({ type: "start", model: "resolved-id", inputTokens, cachedInputTokens, cacheTier: cachedInputTokens ? "disk" : undefined });
const text = (chunk: string): GenerationEvent[] => [{ type: "text-start", index: 0 }, { type: "text-delta", index: 0, text: chunk }, { type: "text-delta", index: 0, text: "!" }, { type: "text-end", index: 0 }];
const finish = (inputTokens: number, cachedInputTokens: number, outputTokens: number): GenerationEvent => ({ type: "finish", reason: "stop", usage: { inputTokens, cachedInputTokens, outputTokens } });

describe("createResponseObserver", () => {
  it("sums the usage of a request's generations, times the first token once and the gaps within each generation", async () => {
    const observer = createResponseObserver({ requestId: "req_1", method: "POST", route: "/v1/chat/completions" }, { clock: steppingClock() });
    await drain(observer.observe({ n: 1 }, replay([start(12, 8), ...text("Hi"), finish(12, 8, 2)])));
    await drain(observer.observe({ n: 2 }, replay([start(12, 12), ...text("Yo"), finish(12, 12, 3)])));
    const record = observer.complete(200);
    expect(record).toMatchObject({ status: 200, model: "resolved-id", inputTokens: 24, cachedInputTokens: 20, outputTokens: 5, cacheTier: "disk" });
    expect(record.error).toBeUndefined();
    // Readings: arrival 10, first generation 20, its deltas 30 and 40; second generation 50, deltas 60 and 70; end 80.
    expect(record.timeToFirstTokenMs).toBe(10);
    expect(record.interTokenMs).toEqual([10, 10]);
    expect(record.durationMs).toBe(70);
    expect(record.prompt).toBeUndefined();
  });

  it("keeps the prompt's usage and the cause of a generation cut short by a thrown failure", async () => {
    const observer = createResponseObserver({ requestId: "req_2", method: "POST", route: "/v1/messages" }, { recordBodies: true });
    const failure = new EngineError("backend_failure", "the slot died");
    await expect(drain(observer.observe({ asked: "hi" }, replay([start(30), ...text("Par")], failure)))).rejects.toBe(failure);
    expect(observer.complete(200)).toMatchObject({
      inputTokens: 30, cachedInputTokens: 0, outputTokens: 0, error: "backend_failure: the slot died", prompt: { asked: "hi" }, output: "Par!",
    });
  });

  it("names the tool before a call's arguments in the recorded output", async () => {
    const observer = createResponseObserver({ requestId: "req_4", method: "POST", route: "/v1/messages" }, { recordBodies: true });
    const call: GenerationEvent[] = [
      { type: "tool-call-start", index: 1, id: "call_1", name: "Write" },
      { type: "tool-call-delta", index: 1, json: '{"file_path":"/a.py"}' },
      { type: "tool-call-end", index: 1, input: { file_path: "/a.py" } },
    ];
    await drain(observer.observe({}, replay([start(5), ...text("Ok"), ...call, finish(5, 0, 9)])));
    expect(observer.complete(200).output).toBe('Ok!\n[tool call Write] {"file_path":"/a.py"}');
  });

  it("records an in-band error event and settles the policy with the complete record", async () => {
    const observer = createResponseObserver({ requestId: "req_3", method: "POST", route: "/v1/responses" });
    const settled: unknown[] = [];
    observer.whenComplete((record) => settled.push({ ...record }));
    await drain(observer.observe({}, replay([start(5), { type: "error", error: new EngineError("context_overflow", "too long") }])));
    expect(settled).toEqual([]);
    observer.complete(200);
    expect(settled).toEqual([expect.objectContaining({ status: 200, inputTokens: 5, error: "context_overflow: too long" })]);
  });

  it("stops a generation its reader left early and still counts its usage; without a stop, just closes it", async () => {
    let aborted = false;
    let closed = false;
    async function* endless(): AsyncGenerator<GenerationEvent> {
      try {
        yield start(7);
        yield { type: "text-start", index: 0 };
        let produced = 0;
        while (!aborted) {
          produced++;
          yield { type: "text-delta", index: 0, text: "x" };
        }
        yield { type: "text-end", index: 0 };
        yield { type: "finish", reason: "aborted", usage: { inputTokens: 7, cachedInputTokens: 0, outputTokens: produced } };
      } finally {
        closed = true;
      }
    }
    const observer = createResponseObserver({ requestId: "req_5", method: "POST", route: "/v1/messages" });
    const events = observer.observe({}, endless(), () => (aborted = true))[Symbol.asyncIterator]();
    for (let i = 0; i < 5; i++) await events.next();
    await events.return!(undefined);
    expect(observer.complete(200)).toMatchObject({ inputTokens: 7, outputTokens: 3 });
    expect(closed).toBe(true);

    aborted = closed = false;
    const unstoppable = createResponseObserver({ requestId: "req_6", method: "POST", route: "/v1/messages" });
    const more = unstoppable.observe({}, endless())[Symbol.asyncIterator]();
    for (let i = 0; i < 3; i++) await more.next();
    await more.return!(undefined);
    expect([closed, unstoppable.complete(200).outputTokens]).toEqual([true, 0]);
  });

  it("records a response whose client left before its end as 499 aborted, with the prompt it was charged", async () => {
    const observer = createResponseObserver({ requestId: "req_7", method: "POST", route: "/v1/chat/completions" });
    const events = observer.observe({}, replay([start(17_443), ...text("late")]), () => {})[Symbol.asyncIterator]();
    await events.next();
    await events.return!(undefined);
    expect(observer.clientLeft()).toMatchObject({ status: 499, error: expect.stringMatching(/^aborted: /), inputTokens: 17_443, outputTokens: 0 });
  });

  it("records an embedding call's resolved model and input tokens, or its failure", async () => {
    const observer = createResponseObserver({ requestId: "req_e", method: "POST", route: "/v1/embeddings" }, { recordBodies: true });
    const request = { model: "asked", inputs: ["a", "b"] };
    await observer.observeEmbedding(request, Promise.resolve({ model: "resolved-id", vectors: [[1], [1]], inputTokens: 6 }));
    expect(observer.complete(200)).toMatchObject({ model: "resolved-id", inputTokens: 6, cachedInputTokens: 0, outputTokens: 0, prompt: request });

    const failing = createResponseObserver({ requestId: "req_f", method: "POST", route: "/v1/embeddings" });
    const refusal = new EngineError("invalid_request", "input.0: must not be empty");
    await expect(failing.observeEmbedding({}, Promise.reject(refusal))).rejects.toBe(refusal);
    expect(failing.complete(400)).toMatchObject({ error: "invalid_request: input.0: must not be empty" });
  });
});
