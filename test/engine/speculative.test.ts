/**
 * Speculative decoding on real models: Qwen2.5-Coder-1.5B drafted by Qwen2.5-Coder-0.5B (the catalog's pair, one
 * tokenizer) and SmolLM2-135M drafting for itself. Greedy output with the draft is byte-identical to the target's
 * alone, a draft drawing at a temperature from the target's own distribution is kept, the usage counts the drafted
 * and accepted tokens, requests the draft cannot serve exactly (penalties, a seed at a temperature) run undrafted,
 * and a draft with another vocabulary is refused at load.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createEngine, type Engine } from "../../src/engine/index.js";
import { catalogModelPath, realModelPath, testThreads } from "../helpers/real-model.js";
import { finishOf, readEvents, textOf, userRequest } from "../helpers/stream-events.js";

const CODE_PROMPT = "Write a Python function that returns the n-th Fibonacci number iteratively, with a docstring.";
let engine: Engine;

beforeAll(async () => {
  const small = realModelPath();
  engine = await createEngine({
    models: [
      { id: "small", path: small },
      { id: "small-drafted", path: small, draft: { path: small, maxTokens: 4 } },
      // Drafts at every step: on 2 cores drafting is slower than the model alone, which the measured rule sees.
      { id: "small-always-drafted", path: small, draft: { path: small, maxTokens: 4, always: true } },
    ],
    parallel: 1, ctxSize: 1024, threads: testThreads(),
  });
}, 120_000);
afterAll(async () => engine?.close());

describe("a model drafting for itself", { timeout: 120_000 }, () => {
  it("gives the undrafted greedy output, with every draft accepted", async () => {
    const plain = await readEvents(engine.generate(userRequest("small", CODE_PROMPT, { maxTokens: 48 })));
    const drafted = await readEvents(engine.generate(userRequest("small-drafted", CODE_PROMPT, { maxTokens: 48 })));
    expect(textOf(drafted)).toBe(textOf(plain));
    expect(finishOf(plain).usage.draft).toBeUndefined();
    const { draft, outputTokens } = finishOf(drafted).usage;
    expect(outputTokens).toBe(finishOf(plain).usage.outputTokens);
    // The draft is the target: it proposes what the target then samples (a step ends where the draft is unsure).
    expect(draft!.drafted).toBeGreaterThan(0);
    expect(draft!.accepted).toBe(draft!.drafted);
  });

  it("samples at a temperature within the token limit, and ends at a stop sequence where the target alone does", async () => {
    const sampled = await readEvents(engine.generate(userRequest("small-drafted", CODE_PROMPT, { maxTokens: 40, sampling: { temperature: 0.8 } })));
    expect(finishOf(sampled).usage.outputTokens).toBeLessThanOrEqual(40);
    expect(finishOf(sampled).usage.draft!.accepted).toBeLessThanOrEqual(finishOf(sampled).usage.draft!.drafted);
    const plain = await readEvents(engine.generate(userRequest("small", CODE_PROMPT, { maxTokens: 48 })));
    const stop = textOf(plain).slice(20, 26);
    const stopped = await readEvents(engine.generate(userRequest("small-drafted", CODE_PROMPT, { maxTokens: 48, stop: [stop] })));
    expect(finishOf(stopped)).toMatchObject({ reason: "stop-sequence", stopSequence: stop });
    expect(textOf(stopped)).toBe(textOf(plain).slice(0, textOf(plain).indexOf(stop)));
  });

  it("at a temperature keeps the proposals it draws from its own distribution, which is the target's", async () => {
    // Judged by probability (speculative-acceptance.ts), a draft whose distribution is the target's is kept whatever
    // it draws; matched against the target's own draw, a greedy proposal is kept only as often as the target picks
    // its best token too (50 of 56 times when measured).
    let drafted = 0;
    let accepted = 0;
    for (const prompt of [CODE_PROMPT, "Tell me a short story about a lighthouse keeper.", "List five uses of a paperclip."]) {
      const sampled = await readEvents(engine.generate(userRequest("small-always-drafted", prompt, { maxTokens: 48, sampling: { temperature: 1 } })));
      drafted += finishOf(sampled).usage.draft!.drafted;
      accepted += finishOf(sampled).usage.draft!.accepted;
    }
    expect(drafted).toBeGreaterThanOrEqual(10);
    // Not all: the draft evaluates one token at a time and the target several, so their probabilities differ in the
    // last digits.
    expect(accepted / drafted).toBeGreaterThan(0.95);
  });

  it.each([
    ["repetition penalties", { temperature: 0, repeatPenalty: 1.3 }],
    ["a seed at a temperature", { temperature: 0.8, seed: 42 }],
  ])("leaves undrafted the requests with %s, whose output stays the target's", async (_, sampling) => {
    const plain = await readEvents(engine.generate(userRequest("small", CODE_PROMPT, { maxTokens: 32, sampling })));
    const drafted = await readEvents(engine.generate(userRequest("small-drafted", CODE_PROMPT, { maxTokens: 32, sampling })));
    expect(textOf(drafted)).toBe(textOf(plain));
    expect(finishOf(drafted).usage.draft).toBeUndefined();
  });

  it("still drafts a request that keeps every candidate (top-k 0) at a temperature (greedily: speculative-decode.ts)", async () => {
    const sampled = await readEvents(engine.generate(userRequest("small-always-drafted", CODE_PROMPT, { maxTokens: 32, sampling: { temperature: 1, topK: 0 } })));
    const { draft, outputTokens } = finishOf(sampled).usage;
    expect(outputTokens).toBeGreaterThan(0);
    expect(draft!.drafted).toBeGreaterThan(0);
    expect(draft!.accepted).toBeLessThanOrEqual(draft!.drafted);
  });

  it("leaves undrafted a request for logprobs, which describe the model's own distribution", async () => {
    const request = userRequest("small-always-drafted", CODE_PROMPT, { maxTokens: 8, logprobs: 2 });
    const events = await readEvents(engine.generate(request));
    expect(finishOf(events).usage.draft).toBeUndefined();
    const logprobs = events.flatMap((event) => event.type === "text-delta" ? event.logprobs ?? [] : []);
    expect(logprobs.length).toBeGreaterThan(0);
    for (const logprob of logprobs) expect(logprob.top).toHaveLength(2);
  });
});

describe("a draft with another vocabulary", { timeout: 120_000 }, () => {
  it("is refused at load with an error naming both models", async () => {
    const error = await createEngine({
      models: [{ id: "coder", path: catalogModelPath("qwen2.5-coder-0.5b"), draft: { path: realModelPath() } }],
      parallel: 1, ctxSize: 512, threads: testThreads(),
    }).catch((caught: unknown) => caught);
    expect(error).toMatchObject({ code: "invalid_request", details: { param: "draftModel" } });
    expect((error as Error).message).toMatch(/^smollm2-135m\.gguf cannot draft for qwen2\.5-coder-0\.5b\.gguf: the two models' vocabularies differ \(.+\)$/);
  });
});

describe("Qwen2.5-Coder-1.5B drafted by Qwen2.5-Coder-0.5B", { timeout: 600_000 }, () => {
  let coder: Engine;
  beforeAll(async () => {
    const target = catalogModelPath("qwen2.5-coder-1.5b");
    coder = await createEngine({
      models: [
        { id: "coder", path: target },
        { id: "coder-drafted", path: target, draft: { path: catalogModelPath("qwen2.5-coder-0.5b") } },
      ],
      parallel: 1, ctxSize: 1024, threads: testThreads(),
    });
  }, 300_000);
  afterAll(async () => coder?.close());

  it("writes byte for byte the code the 1.5B model writes alone, most drafts accepted", async () => {
    const plain = await readEvents(coder.generate(userRequest("coder", CODE_PROMPT, { maxTokens: 64 })));
    const drafted = await readEvents(coder.generate(userRequest("coder-drafted", CODE_PROMPT, { maxTokens: 64 })));
    expect(textOf(plain)).toMatch(/def \w+\(n/);
    expect(textOf(drafted)).toBe(textOf(plain));
    const { draft } = finishOf(drafted).usage;
    expect(draft!.accepted).toBeGreaterThan(0);
    expect(draft!.accepted).toBeLessThanOrEqual(draft!.drafted);
    expect(coder.findModel("coder-drafted")?.details).toMatchObject({ draftModel: "qwen2.5-coder-0.5b.gguf", draftMax: 8 });
  });
});
