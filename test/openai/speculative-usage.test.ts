/**
 * A model served with a draft model through the official openai SDK: chat and text completions report the drafted
 * tokens the model kept and rejected in `usage.completion_tokens_details`, streamed and not, and the text is the
 * model's own greedy text. The real default model drafts for itself (the cheapest real pair with one vocabulary).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import OpenAI from "openai";
import { realModelPath } from "../helpers/real-model.js";
import { startTestServer, TEST_MODEL, type TestServer } from "../helpers/server.js";

const PROMPT = "Write a Python function that returns the n-th Fibonacci number iteratively, with a docstring.";
let drafted: TestServer;
let plain: TestServer;

beforeAll(async () => {
  drafted = await startTestServer({ model: { id: TEST_MODEL, path: realModelPath(), draft: { path: realModelPath(), maxTokens: 4 } }, parallel: 1, ctxSize: 1024 });
  plain = await startTestServer({ parallel: 1, ctxSize: 1024 });
}, 120_000);
afterAll(async () => {
  await drafted?.close();
  await plain?.close();
});

const client = (server: TestServer) => new OpenAI({ apiKey: "unused", baseURL: `${server.url}/v1`, maxRetries: 0 });
const request = { model: TEST_MODEL, messages: [{ role: "user" as const, content: PROMPT }], max_tokens: 48, temperature: 0 };

describe("usage of a drafted model", { timeout: 120_000 }, () => {
  it("counts kept and rejected drafts in a chat completion, whose text is the model's alone", async () => {
    const [withDraft, alone] = [await client(drafted).chat.completions.create(request), await client(plain).chat.completions.create(request)];
    expect(withDraft.choices[0]!.message.content).toBe(alone.choices[0]!.message.content);
    expect(alone.usage?.completion_tokens_details).toBeUndefined();
    const details = withDraft.usage!.completion_tokens_details!;
    expect(Number.isInteger(details.accepted_prediction_tokens)).toBe(true);
    expect(Number.isInteger(details.rejected_prediction_tokens)).toBe(true);
    // The first generated step drafts whatever the costs measured since: the counts are of real proposals.
    expect(details.accepted_prediction_tokens! + details.rejected_prediction_tokens!).toBeGreaterThan(0);
    expect(details.accepted_prediction_tokens).toBeLessThanOrEqual(withDraft.usage!.completion_tokens);
  });

  it("reports them in a streamed chat completion's usage chunk and in text completions", async () => {
    const stream = await client(drafted).chat.completions.create({ ...request, stream: true, stream_options: { include_usage: true } });
    let usage: OpenAI.CompletionUsage | undefined;
    for await (const chunk of stream) usage = chunk.usage ?? usage;
    expect(usage?.completion_tokens_details).toMatchObject({ accepted_prediction_tokens: expect.any(Number), rejected_prediction_tokens: expect.any(Number) });
    const completion = await client(drafted).completions.create({ model: TEST_MODEL, prompt: "def fibonacci(n):", max_tokens: 32, temperature: 0 });
    expect(completion.usage?.completion_tokens_details).toMatchObject({ accepted_prediction_tokens: expect.any(Number), rejected_prediction_tokens: expect.any(Number) });
  });
});
