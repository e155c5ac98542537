/**
 * The engine on the real default model (two sequences in one context): determinism, stop sequences, max tokens,
 * real usage, concurrency, the prefix cache, forced tool calls, raw completions and the context limit.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { getLlama, type Llama, type LlamaModel } from "node-llama-cpp";
import { createEngine, type Engine, type PrefixDivergence, type ChatRequest } from "../../src/engine/index.js";
import { renderChatPrompt, type PromptTemplate } from "../../src/engine/text/render-prompt.js";
import { realModelPath, testThreads } from "../helpers/real-model.js";
import { finishOf, readEvents, sharedPrefixLength, startOf, textOf, userRequest } from "../helpers/stream-events.js";

const CTX_SIZE = 2048;
let engine: Engine;
const divergences: PrefixDivergence[] = [];
let vocabulary: { llama: Llama; model: LlamaModel; template: PromptTemplate };

beforeAll(async () => {
  engine = await createEngine({ models: [{ id: "smollm2-135m", path: realModelPath(), aliases: ["default"] }], parallel: 2, ctxSize: CTX_SIZE, threads: testThreads(), onPrefixDivergence: (_model, info) => divergences.push(info) });
  // An independent tokenizer (vocabulary only) to check the engine's counts against.
  const llama = await getLlama({ build: "never", gpu: false });
  const model = await llama.loadModel({ modelPath: realModelPath(), vocabOnly: true });
  const template = { source: model.fileInfo.metadata.tokenizer?.chat_template, bosToken: model.tokens.bosString ?? undefined, eosToken: model.tokens.eosString ?? undefined };
  vocabulary = { llama, model, template };
});

afterAll(async () => {
  await engine?.close();
  await vocabulary?.model.dispose();
  await vocabulary?.llama.dispose();
});

const tokenize = (request: ChatRequest) => vocabulary.model.tokenize(renderChatPrompt(request, vocabulary.template), true);

describe("createEngine", () => {
  it("lists the model with its context and details, and finds it by id or alias", () => {
    const [info] = engine.listModels();
    expect(info).toMatchObject({ id: "smollm2-135m", backend: "llama-cpp", contextSize: CTX_SIZE, trainContextSize: 8192, fim: false });
    expect(info?.details).toMatchObject({ architecture: "llama", quantization: "Q4_1" });
    expect(engine.findModel("default")?.id).toBe("smollm2-135m");
    expect(engine.findModel("nope")).toBeUndefined();
  });

  it("rejects an unknown model on the first next()", async () => {
    const stream = engine.generate(userRequest("no-such-model", "Hi"));
    await expect(readEvents(stream)).rejects.toMatchObject({ code: "not_found", message: "model: no-such-model" });
  });
});

describe("generate", () => {
  it("gives the same output twice at temperature 0", async () => {
    const request = userRequest("default", "Name three colours.");
    const first = await readEvents(engine.generate(request));
    const second = await readEvents(engine.generate(request));
    expect(textOf(first).length).toBeGreaterThan(0);
    expect(textOf(second)).toBe(textOf(first));
    expect(startOf(first).model).toBe("smollm2-135m");
  });

  it("ends at a stop sequence taken from a greedy run, reporting it and leaving it out of the text", async () => {
    const request = userRequest("default", "Write one sentence about the sea.", { maxTokens: 24 });
    const text = textOf(await readEvents(engine.generate(request)));
    const words = text.trim().split(/\s+/);
    expect(words.length).toBeGreaterThan(2);
    const stop = ` ${words[2]}`;
    const events = await readEvents(engine.generate({ ...request, stop: [stop] }));
    expect(finishOf(events)).toMatchObject({ reason: "stop-sequence", stopSequence: stop });
    expect(textOf(events)).toBe(text.slice(0, text.indexOf(stop)));
  });

  it("ends with reason length after exactly maxTokens output tokens", async () => {
    const events = await readEvents(engine.generate(userRequest("default", "Count from one to one hundred in words.", { maxTokens: 7 })));
    expect(finishOf(events)).toMatchObject({ reason: "length", usage: { outputTokens: 7 } });
  });

  it("counts input tokens as the tokenizer's count of the rendered prompt, same as countTokens", async () => {
    const request: ChatRequest = { ...userRequest("default", "What is a kiln?", { maxTokens: 4 }), system: "You answer briefly." };
    const expected = tokenize(request).length;
    const events = await readEvents(engine.generate(request));
    expect(startOf(events).inputTokens).toBe(expected);
    expect(finishOf(events).usage.inputTokens).toBe(expected);
    expect(await engine.countTokens(request)).toBe(expected);
  });

  it("completes two concurrent requests on two sequences", async () => {
    const [a, b] = await Promise.all([
      readEvents(engine.generate(userRequest("default", "Say hello.", { maxTokens: 12 }))),
      readEvents(engine.generate(userRequest("default", "Say goodbye.", { maxTokens: 12 }))),
    ]);
    for (const events of [a, b]) {
      expect(["stop", "length"]).toContain(finishOf(events).reason);
      expect(finishOf(events).usage.outputTokens).toBeGreaterThan(0);
    }
    expect(engine.stats()).toMatchObject({ activeSequences: 0, queueDepth: 0 });
  });

  it("reuses the cached prefix when a conversation grows, reporting exactly the shared tokens", async () => {
    const first: ChatRequest = { ...userRequest("default", "Tell me about pottery kilns.", { maxTokens: 1 }), system: "Prefix cache check: be short." };
    await readEvents(engine.generate(first));
    const second: ChatRequest = {
      ...first,
      maxTokens: 4,
      messages: [...first.messages, { role: "assistant", parts: [{ type: "text", text: "Kilns fire clay." }] }, { role: "user", parts: [{ type: "text", text: "How hot?" }] }],
    };
    // With maxTokens 1 the only generated token is never evaluated, so the sequence holds exactly the first prompt.
    const expected = Math.min(sharedPrefixLength(tokenize(first), tokenize(second)), tokenize(second).length - 1);
    const events = await readEvents(engine.generate(second));
    expect(expected).toBeGreaterThan(0);
    expect(startOf(events).cachedInputTokens).toBe(expected);
    expect(finishOf(events).usage.cachedInputTokens).toBe(expected);

    // A different last message diverges inside the cached prompt: the debug hook says where, and only that prefix is reused.
    const third: ChatRequest = { ...second, messages: [...second.messages.slice(0, -1), { role: "user", parts: [{ type: "text", text: "Which clay?" }] }] };
    const position = sharedPrefixLength(tokenize(second), tokenize(third));
    divergences.length = 0;
    const thirdEvents = await readEvents(engine.generate(third));
    expect(startOf(thirdEvents).cachedInputTokens).toBe(position);
    expect(divergences).toEqual([expect.objectContaining({ position, promptTokens: tokenize(third).length, promptExcerpt: expect.any(String) })]);
  });

  it("forces a call of the named tool with JSON arguments", async () => {
    const request: ChatRequest = {
      ...userRequest("default", "What is the weather in Paris?", { maxTokens: 48 }),
      tools: [{ name: "get_weather", description: "Current weather for a city", inputSchema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } }],
      toolChoice: { type: "tool", name: "get_weather" },
    };
    const events = await readEvents(engine.generate(request));
    const calls = events.filter((event) => event.type === "tool-call-end");
    const start = events.find((event) => event.type === "tool-call-start");
    expect(finishOf(events).reason).toBe("tool-calls");
    expect(start).toMatchObject({ name: "get_weather" });
    expect(calls.length).toBeGreaterThan(0);
    expect(calls[0]).toMatchObject({ input: { city: expect.any(String) } });
    const json = events.flatMap((event) => (event.type === "tool-call-delta" && event.index === start?.index ? [event.json] : [])).join("");
    expect(JSON.parse(json)).toEqual((calls[0] as { input: unknown }).input);
  });

  it("refuses a prompt longer than the context before generating", async () => {
    const request = userRequest("default", "kiln ".repeat(CTX_SIZE + 100));
    const tokens = await engine.countTokens(request);
    const error = await readEvents(engine.generate(request)).catch((caught: unknown) => caught);
    expect(error).toMatchObject({ code: "context_overflow", message: `prompt is too long: ${tokens} tokens > ${CTX_SIZE} maximum`, details: { promptTokens: tokens, contextSize: CTX_SIZE } });
  });
});

describe("complete", () => {
  it("continues a raw prompt and reports logprobs", async () => {
    const events = await readEvents(engine.complete({ model: "default", prompt: "The capital of France is", maxTokens: 5, logprobs: 2, sampling: { temperature: 0 } }));
    const deltas = events.filter((event) => event.type === "text-delta");
    const logprobs = deltas.flatMap((event) => event.logprobs ?? []);
    expect(finishOf(events).usage.outputTokens).toBeGreaterThan(0);
    expect(logprobs.length).toBeGreaterThan(0);
    expect(logprobs[0]?.logprob).toBeLessThanOrEqual(0);
    expect(logprobs[0]?.top.length).toBeLessThanOrEqual(2);
  });

  it("refuses a suffix on a model without fill-in-the-middle tokens", async () => {
    const stream = engine.complete({ model: "default", prompt: "def add(a, b):", suffix: "\n", maxTokens: 4 });
    await expect(readEvents(stream)).rejects.toMatchObject({ code: "invalid_request", details: { param: "suffix" } });
  });
});
