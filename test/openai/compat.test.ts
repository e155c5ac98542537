/**
 * What other servers' test suites (llama.cpp's server tests, vLLM's entrypoint tests) expect of an OpenAI-compatible
 * server where the answer needs the real model: logprobs, n > 1, the legacy completions prompt forms, token ids
 * checked against the vocabulary, tool-call ids, and JSON nested just within the limit through prompt rendering and
 * the grammar builder. A real server with the real default model, the official SDKs as clients, and a front kiln
 * relaying to it as a remote model. What is answered before any model runs (routes without /v1, field validation,
 * JSON nested too deep) is in validation.test.ts, on the scripted model.
 */
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createEngine, type Engine } from "../../src/engine/index.js";
import { loadVocabulary, type LoadedVocabulary } from "../../src/engine/text/load-vocabulary.js";
import { createServer, type ListeningServer } from "../../src/server/app.js";
import { checkRecordedStreams } from "../helpers/openai-stream.js";
import { MODEL_ID, TEST_KEY, startOpenAITestServer, type OpenAITestServer } from "../helpers/openai-server.js";
import { realModelPath } from "../helpers/real-model.js";

const RELAY = "relay";
const ask = [{ role: "user" as const, content: "Name a colour." }];
const weather = { type: "object", properties: { city: { type: "string" } }, required: ["city"], additionalProperties: false };

let kiln: OpenAITestServer;
let anthropic: Anthropic;
let frontEngine: Engine;
let front: ListeningServer;
let vocabulary: LoadedVocabulary;

beforeAll(async () => {
  vocabulary = await loadVocabulary(realModelPath());
  kiln = await startOpenAITestServer();
  anthropic = new Anthropic({ apiKey: TEST_KEY, baseURL: kiln.url, maxRetries: 0 });
  frontEngine = await createEngine({ models: [], remoteModels: [{ id: RELAY, upstreamModel: MODEL_ID, replicas: [{ url: kiln.baseURL, apiKey: TEST_KEY }] }] });
  front = await createServer(frontEngine).listen({ host: "127.0.0.1", port: 0 });
});

afterAll(async () => {
  expect(await checkRecordedStreams(kiln.recorder)).toEqual([]);
  await front?.close();
  await frontEngine?.close();
  await kiln?.close();
  await vocabulary?.dispose();
});

/** `levels` arrays nested in one another around `inner`. */
function nested(levels: number, inner: unknown = 1): unknown {
  let value = inner;
  for (let i = 0; i < levels; i++) value = [value];
  return value;
}

// The CPU is shared; grammar-constrained requests can take minutes there.
describe("compatibility with other servers' suites", { timeout: 400_000 }, () => {
  // The ids are checked against the real vocabulary. Keys that are no ids, stream_options without stream and an
  // oversized seed are refused by validation alone: in validation.test.ts, on the scripted model.
  it("refuses out-of-vocabulary logit_bias, naming the field, and applies a bias in range", async () => {
    const refused = (body: object) => kiln.client.chat.completions.create({ model: MODEL_ID, messages: ask, max_tokens: 2, ...body } as never).then(() => undefined, (error) => error);
    expect(await refused({ logit_bias: { "49152": 5 } })).toMatchObject({ status: 400, param: "logit_bias" });
    const completion = await kiln.client.completions.create({ model: MODEL_ID, prompt: "A", max_tokens: 1, logit_bias: { "60000": 1 } }).catch((error) => error);
    expect(completion).toMatchObject({ status: 400, param: "logit_bias" });
    // In range, the bias is applied: +100 on one token makes greedy decoding repeat it.
    const tokensOf = async (logit_bias?: Record<string, number>) => (await kiln.client.completions.create({ model: MODEL_ID, prompt: "Hello", max_tokens: 3, logprobs: 1, temperature: 0, seed: 2 ** 62, logit_bias })).choices[0]!.logprobs!.tokens!;
    const biased = await tokensOf({ "1000": 100 });
    expect(new Set(biased).size).toBe(1);
    expect(biased).not.toEqual(await tokensOf());
  });

  // The refusal of an unknown content block type is in validation.test.ts (scripted): this echo is rendered into
  // the real model's prompt.
  it("accepts server-tool echoes in an Anthropic conversation", async () => {
    const echo = { type: "server_tool_use", id: "srvtoolu_1", name: "web_search", input: { query: "x" } };
    const message = await anthropic.messages.create({ model: MODEL_ID, max_tokens: 2, messages: [...ask, { role: "assistant", content: [echo as never, { type: "text", text: "Red." }] }, { role: "user", content: "Another?" }] });
    expect(message.type).toBe("message");
  });

  it("writes tool-call ids with one prefix per surface, also when relaying an upstream's call_ ids", async () => {
    const tools = [{ type: "function" as const, function: { name: "get_weather", parameters: weather } }];
    const toolChoice = { type: "function" as const, function: { name: "get_weather" } };
    const openai = await kiln.client.chat.completions.create({ model: MODEL_ID, messages: ask, tools, tool_choice: toolChoice, max_tokens: 30 });
    expect(openai.choices[0]!.message.tool_calls![0]!.id).toMatch(/^call_(?!call_)/);
    const message = await anthropic.messages.create({
      model: MODEL_ID, max_tokens: 30, messages: ask, tools: [{ name: "get_weather", input_schema: weather as never }], tool_choice: { type: "tool", name: "get_weather" },
    });
    expect(message.content.find((block) => block.type === "tool_use")!.id).toMatch(/^toolu_(?!call_|toolu_)/);
    const relayed = new OpenAI({ apiKey: "unused", baseURL: `${front.url}/v1`, maxRetries: 0 });
    const viaRelay = await relayed.chat.completions.create({ model: RELAY, messages: ask, tools, tool_choice: toolChoice, max_tokens: 30 });
    expect(viaRelay.choices[0]!.message.tool_calls![0]!.id).toMatch(/^call_(?!call_)/);
    const relayedAnthropic = new Anthropic({ apiKey: "unused", baseURL: front.url, maxRetries: 0 });
    const viaRelayAnthropic = await relayedAnthropic.messages.create({
      model: RELAY, max_tokens: 30, messages: ask, tools: [{ name: "get_weather", input_schema: weather as never }], tool_choice: { type: "tool", name: "get_weather" },
    });
    expect(viaRelayAnthropic.content.find((block) => block.type === "tool_use")!.id).toMatch(/^toolu_(?!call_|toolu_)/);
  });

  it("finishes a forced call cut off by max_tokens with the limit, directly and through a relay, as the hosted APIs do", async () => {
    const tools = [{ type: "function" as const, function: { name: "get_weather", parameters: weather } }];
    const request = { messages: ask, tools, tool_choice: { type: "function" as const, function: { name: "get_weather" } }, max_tokens: 20 };
    for (const [client, model] of [[kiln.client, MODEL_ID], [new OpenAI({ apiKey: "unused", baseURL: `${front.url}/v1`, maxRetries: 0 }), RELAY]] as const) {
      const choice = (await client.chat.completions.create({ model, ...request })).choices[0]!;
      expect(choice.finish_reason, model).toBe("length");
      expect(choice.message.tool_calls![0]).toMatchObject({ function: { name: "get_weather" } });
    }
    const cut = await anthropic.messages.create({
      model: MODEL_ID, max_tokens: 20, messages: ask, tools: [{ name: "get_weather", input_schema: weather as never }], tool_choice: { type: "tool", name: "get_weather" },
    });
    expect(cut.stop_reason).toBe("max_tokens");
    expect(cut.content.find((block) => block.type === "tool_use")).toMatchObject({ name: "get_weather" });
  });

  it("serves JSON nested just within the limit through prompt rendering and the grammar builder", async () => {
    const input = { a: nested(90) };
    const message = await anthropic.messages.create({
      model: MODEL_ID, max_tokens: 2,
      messages: [{ role: "user", content: "hi" }, { role: "assistant", content: [{ type: "tool_use", id: "t1", name: "f", input }] }, { role: "user", content: [{ type: "tool_result", tool_use_id: "t1", content: "ok" }] }],
      tools: [{ name: "f", input_schema: { type: "object" } }],
    });
    expect(message.type).toBe("message");
    let schema: Record<string, unknown> = { type: "string" };
    for (let i = 0; i < 45; i++) schema = { type: "array", items: schema };
    const format = await kiln.client.chat.completions.create({ model: MODEL_ID, messages: ask, max_tokens: 2, response_format: { type: "json_schema", json_schema: { name: "deep", schema: { type: "object", properties: { a: schema } } } } });
    expect(format.choices[0]!.message.content!.startsWith("{")).toBe(true);
  });

  it("returns real chat logprobs, streaming and not, and passes them through a relay", async () => {
    const data = await kiln.client.chat.completions.create({ model: MODEL_ID, messages: ask, max_tokens: 4, temperature: 0, logprobs: true, top_logprobs: 2 });
    const content = data.choices[0]!.logprobs!.content!;
    expect(content.map((token) => token.token).join("")).toBe(data.choices[0]!.message.content);
    expect(content).toHaveLength(data.usage!.completion_tokens);
    for (const token of content) {
      expect(token.logprob).toBeLessThanOrEqual(0);
      expect(token.bytes).toEqual([...Buffer.from(token.token)]);
      expect(token.top_logprobs).toHaveLength(2);
      // Greedy decoding picks the most likely token: it heads the alternatives, with the same logprob.
      expect(token.top_logprobs[0]!.token).toBe(token.token);
      expect(token.top_logprobs[0]!.logprob).toBeCloseTo(token.logprob, 4);
      expect(token.top_logprobs[1]!.logprob).toBeLessThanOrEqual(token.logprob);
    }
    expect((await kiln.client.chat.completions.create({ model: MODEL_ID, messages: ask, max_tokens: 2 })).choices[0]!.logprobs).toBeNull();
    const stream = await kiln.client.chat.completions.create({ model: MODEL_ID, messages: ask, max_tokens: 4, temperature: 0, logprobs: true, stream: true });
    const streamed: string[] = [];
    for await (const chunk of stream) for (const token of chunk.choices[0]?.logprobs?.content ?? []) streamed.push(token.token);
    expect(streamed).toEqual(content.map((token) => token.token));
    const relayed = new OpenAI({ apiKey: "unused", baseURL: `${front.url}/v1`, maxRetries: 0 });
    const viaRelay = await relayed.chat.completions.create({ model: RELAY, messages: ask, max_tokens: 4, temperature: 0, logprobs: true, top_logprobs: 2 });
    expect(viaRelay.choices[0]!.logprobs!.content!.map((token) => token.token)).toEqual(content.map((token) => token.token));
  });

  it("returns Responses output_text logprobs when included, streaming and not", async () => {
    const request = { model: MODEL_ID, input: "Name a colour.", max_output_tokens: 4, temperature: 0, include: ["message.output_text.logprobs" as const], top_logprobs: 1 };
    const response = await kiln.client.responses.create(request);
    const part = (response.output[0] as OpenAI.Responses.ResponseOutputMessage).content[0] as OpenAI.Responses.ResponseOutputText;
    expect(part.logprobs!.map((token) => token.token).join("")).toBe(part.text);
    expect(part.logprobs!.every((token) => token.logprob <= 0 && token.top_logprobs.length === 1)).toBe(true);
    const deltas: string[] = [];
    for await (const event of await kiln.client.responses.create({ ...request, stream: true })) {
      if (event.type === "response.output_text.delta") deltas.push(...event.logprobs.map((token) => token.token));
    }
    expect(deltas).toEqual(part.logprobs!.map((token) => token.token));
  });

  it("generates n choices from one evaluated prompt, with usage counting the prompt once", async () => {
    const single = await kiln.client.chat.completions.create({ model: MODEL_ID, messages: ask, max_tokens: 3, temperature: 0 });
    const before = kiln.engine.stats().cachedPromptTokens;
    const data = await kiln.client.chat.completions.create({ model: MODEL_ID, messages: ask, max_tokens: 3, temperature: 1, seed: 7, n: 3, logprobs: true });
    expect(data.choices.map((choice) => choice.index)).toEqual([0, 1, 2]);
    expect(data.usage!.prompt_tokens).toBe(single.usage!.prompt_tokens);
    expect(data.usage!.completion_tokens).toBe(data.choices.reduce((sum, choice) => sum + choice.logprobs!.content!.length, 0));
    // Choices 2 and 3 found the prompt already evaluated: all but its last token came from the cache.
    expect(kiln.engine.stats().cachedPromptTokens - before).toBeGreaterThanOrEqual(2 * (single.usage!.prompt_tokens - 1));
    const stream = await kiln.client.chat.completions.create({ model: MODEL_ID, messages: ask, max_tokens: 3, n: 2, stream: true, stream_options: { include_usage: true } });
    const finished = new Set<number>();
    let usage: OpenAI.CompletionUsage | undefined;
    for await (const chunk of stream) {
      for (const choice of chunk.choices) if (choice.finish_reason) finished.add(choice.index);
      usage = chunk.usage ?? usage;
    }
    expect([...finished].sort()).toEqual([0, 1]);
    expect(usage!.prompt_tokens).toBe(single.usage!.prompt_tokens);
  });

  it("completes token-id prompts and lists of prompts, one choice per prompt in order, with n", async () => {
    const ids = vocabulary.vocabulary.tokenize("The sky is", false);
    const byIds = await kiln.client.completions.create({ model: MODEL_ID, prompt: ids, max_tokens: 2, temperature: 0, echo: true });
    expect(byIds.choices[0]!.text.startsWith("The sky is")).toBe(true);
    expect(byIds.usage!.prompt_tokens).toBe(ids.length);
    const outside = await kiln.client.completions.create({ model: MODEL_ID, prompt: [1, vocabulary.vocabulary.size], max_tokens: 1 }).catch((error) => error);
    expect(outside).toMatchObject({ status: 400, param: "prompt" });
    const prompts = ["Red, green,", "One, two,", "A, B,"];
    const singles = await Promise.all(prompts.map((prompt) => kiln.client.completions.create({ model: MODEL_ID, prompt, max_tokens: 1 })));
    const data = await kiln.client.completions.create({ model: MODEL_ID, prompt: prompts, max_tokens: 2, n: 2, echo: true });
    expect(data.choices.map((choice) => choice.index)).toEqual([0, 1, 2, 3, 4, 5]);
    data.choices.forEach((choice) => expect(choice.text.startsWith(prompts[Math.floor(choice.index / 2)]!)).toBe(true));
    expect(data.usage!.prompt_tokens).toBe(singles.reduce((sum, single) => sum + single.usage!.prompt_tokens, 0));
    const stream = await kiln.client.completions.create({ model: MODEL_ID, prompt: [ids, ids.slice(0, 2)], max_tokens: 2, stream: true, stream_options: { include_usage: true } });
    const texts = ["", ""];
    for await (const chunk of stream) for (const choice of chunk.choices) texts[choice.index] += choice.text;
    expect(texts.every((text) => text.length > 0)).toBe(true);
  });

  it("echoes the prompt with logprobs for its tokens (the first null), and honours logprobs: 0", async () => {
    const prompt = "One, two, three,";
    const data = await kiln.client.completions.create({ model: MODEL_ID, prompt, max_tokens: 2, temperature: 0, echo: true, logprobs: 1 });
    const logprobs = data.choices[0]!.logprobs!;
    const promptCount = data.usage!.prompt_tokens;
    expect(logprobs.tokens).toHaveLength(promptCount + data.usage!.completion_tokens);
    expect(logprobs.tokens!.join("")).toBe(data.choices[0]!.text);
    expect(logprobs.tokens!.slice(0, promptCount).join("")).toBe(prompt);
    expect(logprobs.token_logprobs![0]).toBeNull();
    expect(logprobs.top_logprobs![0]).toBeNull();
    expect(logprobs.text_offset!.slice(0, 2)).toEqual([0, logprobs.tokens![0]!.length]);
    for (const value of logprobs.token_logprobs!.slice(1)) expect(value).toBeLessThanOrEqual(0);
    // After "One, two," the model finds " three" likely: its logprob is far above a uniform guess over the vocabulary.
    const three = logprobs.tokens!.indexOf(" three");
    expect(logprobs.token_logprobs![three]!).toBeGreaterThan(-Math.log(vocabulary.vocabulary.size) / 2);
    // Scoring the prompt agrees with generating after its head: " three" has the logprob decoding gives it there.
    const next = await kiln.client.completions.create({ model: MODEL_ID, prompt: "One, two,", max_tokens: 1, temperature: 0, logprobs: 5 });
    expect(next.choices[0]!.logprobs!.top_logprobs![0]![" three"]).toBeCloseTo(logprobs.token_logprobs![three]!, 2);
    const streamed = await kiln.client.completions.create({ model: MODEL_ID, prompt, max_tokens: 2, temperature: 0, echo: true, logprobs: 1, stream: true });
    const streamedTokens: Array<number | null> = [];
    for await (const chunk of streamed) streamedTokens.push(...(chunk.choices[0]?.logprobs?.token_logprobs ?? []));
    expect(streamedTokens[0]).toBeNull();
    streamedTokens.slice(1, promptCount).forEach((value, i) => expect(value).toBeCloseTo(logprobs.token_logprobs![i + 1]!, 4));
    // A prompt longer than one scoring batch: counting stays predictable across the batches' seams.
    const counting = Array.from({ length: 60 }, (_, i) => i + 1).join(", ");
    const long = (await kiln.client.completions.create({ model: MODEL_ID, prompt: counting, max_tokens: 1, echo: true, logprobs: 0 })).choices[0]!.logprobs!;
    expect(long.tokens!.length).toBeGreaterThan(100);
    expect(long.tokens!.slice(0, -1).join("")).toBe(counting);
    const late = long.token_logprobs!.slice(60, -1) as number[];
    expect(late.every((value) => typeof value === "number")).toBe(true);
    expect(late.reduce((sum, value) => sum + value, 0) / late.length).toBeGreaterThan(-0.5);
    const zero = await kiln.client.completions.create({ model: MODEL_ID, prompt, max_tokens: 2, temperature: 0, logprobs: 0 });
    expect(zero.choices[0]!.logprobs!.tokens).toHaveLength(zero.usage!.completion_tokens);
    // As on OpenAI, the sampled token's own entry, and only it.
    expect(zero.choices[0]!.logprobs!.top_logprobs!.map((top) => Object.keys(top!))).toEqual(zero.choices[0]!.logprobs!.tokens!.map((token) => [token]));
  });
});
