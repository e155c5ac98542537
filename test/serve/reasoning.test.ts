/**
 * A real model's `<think>` block, split out by kiln, as both protocols carry reasoning, read by the official SDKs
 * against a real server on a loopback port. No reasoning model small enough for these tests is published where kiln
 * pulls models from, so the coder model (Qwen2.5-Coder-0.5B-Instruct) is marked as a reasoning model, as a model's
 * config entry does with `"reasoning": true`, and shown the format by one example turn (reasoning-prompt.ts); at
 * temperature 0 it writes a short block before its answer. What is tested is kiln's side: the real token stream parsed into
 * reasoning, the blocks on the wire, and their signatures.
 */
import Anthropic from "@anthropic-ai/sdk";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import OpenAI from "openai";
import type { GenerationEvent } from "../../src/engine/index.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkRecordedStreams, createRecordingFetch } from "../helpers/openai-stream.js";
import { coderModelPath } from "../helpers/real-model.js";
import { REASONING_SYSTEM, REASONING_TURNS } from "../helpers/reasoning-prompt.js";
import { startTestServer, type TestServer } from "../helpers/server.js";
import { checkAnthropicStream } from "../helpers/sse.js";
import { finishOf, readEvents, textOf } from "../helpers/stream-events.js";

const MODEL = "coder-thinking";
const path = coderModelPath();
const SLOW = { timeout: 300_000 };
const SYSTEM = REASONING_SYSTEM;
// SDK 1.x dropped `temperature` from its Messages types; kiln honours it, and greedy decoding keeps the runs alike.
const GREEDY = { temperature: 0 } as object;
const recorder = createRecordingFetch();
let kiln: TestServer;
let home: string | undefined;
let anthropic: Anthropic;
let openai: OpenAI;

beforeAll(async () => {
  if (!path) return;
  // The thinking-signature secret of this file's server lives in a home of its own.
  process.env.KILN_HOME = home = mkdtempSync(join(tmpdir(), "kiln-reasoning-"));
  kiln = await startTestServer({ model: { id: MODEL, path, reasoning: true }, parallel: 1, ctxSize: 1024 });
  anthropic = new Anthropic({ apiKey: "unused", baseURL: kiln.url, maxRetries: 0 });
  openai = new OpenAI({ apiKey: "unused", baseURL: `${kiln.url}/v1`, maxRetries: 0, fetch: recorder.fetch });
}, 300_000);
afterAll(async () => {
  await kiln?.close();
  if (home) rmSync(home, { recursive: true, force: true });
  expect(await checkRecordedStreams(recorder)).toEqual([]);
});

const anthropicMessages: Anthropic.MessageParam[] = REASONING_TURNS.map(({ role, content }) => ({ role, content }));
const openaiMessages: OpenAI.ChatCompletionMessageParam[] = [{ role: "system", content: SYSTEM }, ...anthropicMessages as OpenAI.ChatCompletionMessageParam[]];

/** The answer is the sum, with no tag or reasoning left in it. */
function expectAnswer(text: string): void {
  expect(text).toContain("42");
  expect(text).not.toMatch(/<\/?think>/);
}

function expectReasoning(text: string | undefined): void {
  expect(text).toMatch(/17/);
  expect(text).not.toMatch(/<\/?think>/);
}

describe.skipIf(!path)("reasoning from a local model", SLOW, () => {
  it("says in the model's details on /v1/models that its output is split into reasoning", async () => {
    const model = await openai.models.retrieve(MODEL) as OpenAI.Model & { details?: Record<string, unknown> };
    expect(model.details).toMatchObject({ reasoning: true });
  });

  it("arrives on /v1/messages as a signed thinking block, then the text", async () => {
    const message = await anthropic.messages.create({ model: MODEL, system: SYSTEM, messages: anthropicMessages, max_tokens: 120, ...GREEDY });
    expect(message.content.map((block) => block.type)).toEqual(["thinking", "text"]);
    const [thinking, text] = message.content as [Anthropic.ThinkingBlock, Anthropic.TextBlock];
    expectReasoning(thinking.thinking);
    expect(thinking.signature).toMatch(/^kiln1\.[A-Za-z0-9+/]{43}=$/);
    expectAnswer(text.text);

    // The block goes back in the next turn as the client got it; changed, it is refused.
    const next = (block: Anthropic.ThinkingBlockParam) => anthropic.messages.create({
      model: MODEL, system: SYSTEM, max_tokens: 1, ...GREEDY,
      messages: [...anthropicMessages, { role: "assistant", content: [block, { type: "text", text: text.text }] }, { role: "user", content: "And 42 + 1?" }],
    });
    expect((await next({ type: "thinking", thinking: thinking.thinking, signature: thinking.signature })).type).toBe("message");
    const refused = await next({ type: "thinking", thinking: `${thinking.thinking} Or 43.`, signature: thinking.signature }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(Anthropic.BadRequestError);
    expect((refused as InstanceType<typeof Anthropic.BadRequestError>).message).toContain("messages.3.content.0.signature: the signature does not match this thinking block");
  });

  it("streams on /v1/messages as thinking deltas and a signature, then text deltas", async () => {
    const stream = anthropic.messages.stream({ model: MODEL, system: SYSTEM, messages: anthropicMessages, max_tokens: 120, ...GREEDY });
    const deltas: string[] = [];
    stream.on("streamEvent", (event) => {
      if (event.type === "content_block_delta") deltas.push(event.delta.type);
    });
    const message = await stream.finalMessage();
    expect(message.content.map((block) => block.type)).toEqual(["thinking", "text"]);
    expectReasoning((message.content[0] as Anthropic.ThinkingBlock).thinking);
    expect((message.content[0] as Anthropic.ThinkingBlock).signature).not.toBe("");
    expectAnswer((message.content[1] as Anthropic.TextBlock).text);
    const firstText = deltas.indexOf("text_delta");
    expect(deltas.slice(0, firstText)).toEqual([...deltas.slice(0, firstText - 1).map(() => "thinking_delta"), "signature_delta"]);

    const raw = await fetch(`${kiln.url}/v1/messages`, {
      method: "POST",
      headers: { "content-type": "application/json", "anthropic-version": "2023-06-01" },
      body: JSON.stringify({ model: MODEL, system: SYSTEM, messages: anthropicMessages, max_tokens: 120, temperature: 0, stream: true }),
    });
    expect(checkAnthropicStream(await raw.text())).toEqual([]);
  });

  it("arrives on chat completions as reasoning_content beside the content", async () => {
    const completion = await openai.chat.completions.create({ model: MODEL, messages: openaiMessages, max_tokens: 120, temperature: 0 });
    const message = completion.choices[0]!.message as OpenAI.ChatCompletionMessage & { reasoning_content?: string };
    expectReasoning(message.reasoning_content);
    expectAnswer(message.content ?? "");
    // The tokens of the think block are counted apart, as part of the completion.
    const reasoningTokens = completion.usage!.completion_tokens_details!.reasoning_tokens!;
    expect(reasoningTokens).toBeGreaterThan(5);
    expect(reasoningTokens).toBeLessThan(completion.usage!.completion_tokens - 5);
  });

  it("streams on chat completions as reasoning_content deltas before the content deltas", async () => {
    const stream = await openai.chat.completions.create({ model: MODEL, messages: openaiMessages, max_tokens: 120, temperature: 0, stream: true });
    const kinds: string[] = [];
    let reasoning = "";
    let content = "";
    for await (const chunk of stream) {
      const delta = chunk.choices[0]?.delta as { content?: string | null; reasoning_content?: string } | undefined;
      if (delta?.reasoning_content) (kinds.push("reasoning"), (reasoning += delta.reasoning_content));
      if (delta?.content) (kinds.push("content"), (content += delta.content));
    }
    expect(kinds.indexOf("content")).toBeGreaterThan(0);
    expect(kinds.lastIndexOf("reasoning")).toBeLessThan(kinds.indexOf("content"));
    expectReasoning(reasoning);
    expectAnswer(content);
  });

  it("leaves a structured output whole, even after a prompt that opened a think block: the grammar's JSON is the answer", async () => {
    const completion = await openai.chat.completions.create({
      model: MODEL, messages: [...openaiMessages, { role: "assistant", content: "<think>\n" }], max_tokens: 60, temperature: 0, response_format: { type: "json_object" },
    });
    const message = completion.choices[0]!.message as OpenAI.ChatCompletionMessage & { reasoning_content?: string };
    expect(message.reasoning_content).toBeUndefined();
    expect(completion.usage!.completion_tokens_details).toBeUndefined();
    if (completion.choices[0]!.finish_reason === "stop") expect(JSON.parse(message.content ?? "")).toBeTypeOf("object");
    else expect(message.content).toMatch(/^\s*\{/);
  });

  it("closes the think block once its budget is spent, and the answer follows", async () => {
    // The API's smallest budget is 1,024 tokens, more than this model thinks; the engine takes any.
    const run = (thinkingBudget?: number) => readEvents(kiln.engine.generate({
      model: MODEL, system: SYSTEM, maxTokens: 60, sampling: { temperature: 0 }, thinkingBudget,
      messages: REASONING_TURNS.map(({ role, content }) => ({ role, parts: [{ type: "text", text: content }] })),
    }));
    const reasoningOf = (events: GenerationEvent[]) => events.map((event) => (event.type === "reasoning-delta" ? event.text : "")).join("");
    const [free, budgeted] = [await run(), await run(4)];
    // Greedy decoding: the budgeted thought is the free one's first four tokens, cut there.
    expect(reasoningOf(budgeted).length).toBeGreaterThan(0);
    expect(reasoningOf(budgeted).length).toBeLessThan(reasoningOf(free).length);
    expect(reasoningOf(free).startsWith(reasoningOf(budgeted))).toBe(true);
    expect(textOf(budgeted).trim().length).toBeGreaterThan(0);
    expect(textOf(budgeted)).not.toMatch(/<\/?think>/);
    // Four tokens of thought, then the closing tag's tokens, all counted as reasoning.
    expect(finishOf(budgeted).usage.reasoningTokens).toBeGreaterThan(4);
    expect(finishOf(budgeted).usage.reasoningTokens).toBeLessThan(finishOf(free).usage.reasoningTokens!);
  });

  it("arrives on the Responses API as a reasoning item before the message", async () => {
    const response = await openai.responses.create({ model: MODEL, instructions: SYSTEM, input: anthropicMessages as OpenAI.Responses.ResponseInput, max_output_tokens: 120, temperature: 0 });
    expect(response.output.map((item) => item.type)).toEqual(["reasoning", "message"]);
    const reasoning = response.output[0] as OpenAI.Responses.ResponseReasoningItem;
    expectReasoning(reasoning.content?.map((part) => part.text).join(""));
    expectAnswer(response.output_text);
    expect(response.usage!.output_tokens_details.reasoning_tokens).toBeGreaterThan(5);
    expect(response.usage!.output_tokens_details.reasoning_tokens).toBeLessThan(response.usage!.output_tokens - 5);
  });

  it("streams on the Responses API as reasoning_text deltas before the output_text deltas", async () => {
    const stream = await openai.responses.create({ model: MODEL, instructions: SYSTEM, input: anthropicMessages as OpenAI.Responses.ResponseInput, max_output_tokens: 120, temperature: 0, stream: true });
    const deltas: string[] = [];
    let completed: OpenAI.Responses.Response | undefined;
    for await (const event of stream) {
      if (event.type === "response.reasoning_text.delta" || event.type === "response.output_text.delta") deltas.push(event.type);
      if (event.type === "response.completed") completed = event.response;
    }
    expect(deltas[0]).toBe("response.reasoning_text.delta");
    expect(deltas.lastIndexOf("response.reasoning_text.delta")).toBeLessThan(deltas.indexOf("response.output_text.delta"));
    expect(completed!.output.map((item) => item.type)).toEqual(["reasoning", "message"]);
    const message = completed!.output[1] as OpenAI.Responses.ResponseOutputMessage;
    expectAnswer(message.content.map((part) => (part.type === "output_text" ? part.text : "")).join(""));
  });
});
