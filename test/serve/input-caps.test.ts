/**
 * Caps on a request's size (messages, content blocks, body bytes) refuse it before any work, in each surface's
 * shape, in-process and on a real loopback port. A refused request never reaches the model, so the model is
 * scripted. That a request within the caps is served and counted by the real tokenizer, and what the context and
 * the prompt thread do with huge prompts, is in huge-inputs.test.ts with the real model.
 */
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { expect, it } from "vitest";
import { startScriptedEngine } from "../helpers/scripted-engine.js";
import { describeMatrix } from "../helpers/server-matrix.js";
import { TEST_MODEL } from "../helpers/server.js";

const user = (content: string) => ({ role: "user" as const, content });
/** `count` alternating turns ending with a user turn. */
const turns = (count: number) => Array.from({ length: count }, (_, i) => ({ role: i % 2 === 0 ? ("user" as const) : ("assistant" as const), content: `turn ${i}` }));
const limits = { inputLimits: { maxMessages: 9, maxBlocks: 12 }, maxBodyBytes: 8 * 1024 * 1024 };

describeMatrix("caps on a request's size", { engine: () => startScriptedEngine(), options: limits }, (server) => {
  const anthropic = () => new Anthropic({ apiKey: "unused", baseURL: server.url, maxRetries: 0, fetch: server.fetch });
  const openai = () => new OpenAI({ apiKey: "unused", baseURL: `${server.url}/v1`, maxRetries: 0, fetch: server.fetch });

  it("refuse too many messages with a 400 naming the limit, on every chat endpoint", async () => {
    const messages = turns(11);
    const refusals = await Promise.all([
      anthropic().messages.create({ model: TEST_MODEL, max_tokens: 2, messages }).catch((e) => e),
      anthropic().messages.countTokens({ model: TEST_MODEL, messages }).catch((e) => e),
      openai().chat.completions.create({ model: TEST_MODEL, max_tokens: 2, messages }).catch((e) => e),
      openai().responses.create({ model: TEST_MODEL, max_output_tokens: 16, input: messages }).catch((e) => e),
    ]);
    for (const refusal of refusals) {
      expect(refusal.status).toBe(400);
      expect(refusal.message).toMatch(/messages: 11 messages exceed this server's limit of 9/);
    }
    expect(refusals[0]).toBeInstanceOf(Anthropic.BadRequestError);
    expect(refusals[2]).toBeInstanceOf(OpenAI.BadRequestError);
  });

  // Over 1 MiB, a body is counted on a worker thread before it is parsed and validated on the event loop: an entry
  // that validation would refuse (the role "robot") is never looked at.
  it("refuse a large body of too many messages or blocks before validating it, in each surface's shape", async () => {
    const long = (count: number) => turns(count).map((turn) => ({ ...turn, content: `${turn.content} ${"x".repeat(120_000)}` }));
    const unvalidated = [...long(10), { role: "robot", content: 42 }] as never;
    const refusals = await Promise.all([
      anthropic().messages.countTokens({ model: TEST_MODEL, messages: unvalidated }).catch((e) => e),
      openai().chat.completions.create({ model: TEST_MODEL, max_tokens: 2, messages: [{ role: "system", content: "Be brief." }, ...long(11)] }).catch((e) => e),
      openai().responses.create({ model: TEST_MODEL, input: [{ role: "user", content: Array.from({ length: 13 }, () => ({ type: "input_text" as const, text: "x".repeat(100_000) })) }] }).catch((e) => e),
    ]);
    expect(refusals[0]).toBeInstanceOf(Anthropic.BadRequestError);
    expect(refusals[0].message).toMatch(/messages: 11 messages exceed this server's limit of 9/);
    expect(refusals[1]).toBeInstanceOf(OpenAI.BadRequestError);
    expect(refusals[1]).toMatchObject({ param: "messages", message: expect.stringMatching(/11 messages exceed/) });
    expect(refusals[2]).toMatchObject({ status: 400, message: expect.stringMatching(/13 content blocks/) });
    const within = await anthropic().messages.countTokens({ model: TEST_MODEL, messages: long(9) });
    expect(within.input_tokens).toBeGreaterThan(0);
  });

  it("refuse too many content blocks (parts and tools) with a 400 naming the limit", async () => {
    const content = Array.from({ length: 13 }, (_, i) => ({ type: "text" as const, text: `part ${i}` }));
    const refusal = await anthropic().messages.countTokens({ model: TEST_MODEL, messages: [{ role: "user", content }] }).catch((e) => e);
    expect(refusal).toBeInstanceOf(Anthropic.BadRequestError);
    expect(refusal.message).toMatch(/13 content blocks \(message parts and tools\) exceed this server's limit of 12/);
    const tools = Array.from({ length: 12 }, (_, i) => ({ type: "function" as const, function: { name: `tool_${i}`, parameters: { type: "object" } } }));
    const withTools = await openai().chat.completions.create({ model: TEST_MODEL, max_tokens: 2, messages: [user("hi")], tools }).catch((e) => e);
    expect(withTools).toBeInstanceOf(OpenAI.BadRequestError);
    expect(withTools.message).toMatch(/13 content blocks/);
  });

  it("refuse a body over the configured size with a 413 in each surface's shape", async () => {
    const big = "x".repeat(9 * 1024 * 1024);
    const tooLarge = await anthropic().messages.countTokens({ model: TEST_MODEL, messages: [user(big)] }).catch((e) => e);
    expect(tooLarge.status).toBe(413);
    expect(tooLarge.error).toMatchObject({ type: "error", error: { type: "request_too_large" } });
    const openaiTooLarge = await openai().chat.completions.create({ model: TEST_MODEL, max_tokens: 2, messages: [user(big)] }).catch((e) => e);
    expect(openaiTooLarge.status).toBe(413);
    expect(openaiTooLarge.message).toMatch(/maximum allowed number of bytes \(8388608\)/);
  });
});
