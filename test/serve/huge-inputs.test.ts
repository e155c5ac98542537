/**
 * Huge inputs against a real server with the real default model: a request within the caps on messages is
 * counted; a prompt that cannot fit the context is refused before it is tokenized; and an enormous token count
 * does not hold the event loop, so /health answers while it runs, as it does while a body far over the caps is
 * refused. The other refusals over the caps are in input-caps.test.ts, on the scripted model.
 */
import { request as httpRequest } from "node:http";
import Anthropic from "@anthropic-ai/sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createEngine, type Engine } from "../../src/engine/index.js";
import { createServer, type ListeningServer } from "../../src/server/app.js";
import { realModelPath, testThreads } from "../helpers/real-model.js";
import { TEST_MODEL } from "../helpers/server.js";

const user = (content: string) => ({ role: "user" as const, content });
/** `count` alternating turns ending with a user turn. */
const turns = (count: number) => Array.from({ length: count }, (_, i) => ({ role: i % 2 === 0 ? ("user" as const) : ("assistant" as const), content: `turn ${i}` }));

let engine: Engine;
let server: ListeningServer;
/** The same engine behind the default caps. */
let roomy: ListeningServer;
let anthropic: Anthropic;
/** Token counts the engine has started and finished (the engine is the real one, observed). */
const counting = { started: 0, finished: 0, onStart: () => {} };

beforeAll(async () => {
  engine = await createEngine({ models: [{ id: TEST_MODEL, path: realModelPath() }], parallel: 1, ctxSize: 2048, threads: testThreads() });
  const observed: Engine = {
    ...engine,
    countTokens: async (request) => {
      counting.started++;
      counting.onStart();
      const tokens = await engine.countTokens(request);
      counting.finished++;
      return tokens;
    },
  };
  const limits = { inputLimits: { maxMessages: 9, maxBlocks: 12 }, maxBodyBytes: 8 * 1024 * 1024 };
  server = await createServer(observed, limits).listen({ host: "127.0.0.1", port: 0 });
  roomy = await createServer(observed).listen({ host: "127.0.0.1", port: 0 });
  anthropic = new Anthropic({ apiKey: "unused", baseURL: server.url, maxRetries: 0 });
});

afterAll(async () => {
  await server?.close();
  await roomy?.close();
  await engine?.close();
});

// The refusals of requests over the caps need no model: they are in input-caps.test.ts (scripted). This one needs
// the real tokenizer's count.
describe("caps on a request's size", () => {
  it("serve requests within the caps", async () => {
    const counted = await anthropic.messages.countTokens({ model: TEST_MODEL, messages: turns(9) });
    expect(counted.input_tokens).toBeGreaterThan(9);
  });
});

describe("prompts too large for the context", () => {
  it("are refused on a lower bound of their tokens, before tokenizing", async () => {
    const refusal = await anthropic.messages.create({ model: TEST_MODEL, max_tokens: 2, messages: [user("word ".repeat(200_000))] }).catch((e) => e);
    expect(refusal).toBeInstanceOf(Anthropic.BadRequestError);
    expect(refusal.message).toMatch(/prompt is too long: at least \d+ tokens > 2048 maximum/);
  });
});

/** Sends a count_tokens request and reports whether the engine had finished it when /health answered. */
async function countWhileCheckingHealth(url: string, messages: Array<{ role: "user" | "assistant"; content: string }>) {
  const started = new Promise<void>((resolve) => {
    counting.onStart = resolve;
  });
  const before = counting.finished;
  const client = new Anthropic({ apiKey: "unused", baseURL: url, maxRetries: 0 });
  const big = client.messages.countTokens({ model: TEST_MODEL, messages });
  await started;
  const health = await fetch(`${url}/health`);
  const finishedAtHealth = counting.finished - before;
  expect(health.status).toBe(200);
  const counted = await big;
  expect(counting.finished - before).toBe(1);
  return { finishedAtHealth, counted: counted.input_tokens };
}

describe("an enormous token count leaves the event loop free: /health answers while the count is still running", () => {
  it("for one enormous message (tokenized on the prompt thread)", async () => {
    const { finishedAtHealth, counted } = await countWhileCheckingHealth(roomy.url, [user("word ".repeat(1_500_000))]);
    expect(finishedAtHealth).toBe(0);
    expect(counted).toBeGreaterThan(1_500_000);
  });

  it("for thousands of short messages (the chat template rendered on the prompt thread)", async () => {
    const { finishedAtHealth, counted } = await countWhileCheckingHealth(roomy.url, turns(6_001).map((turn) => ({ ...turn, content: "x" })));
    expect(finishedAtHealth).toBe(0);
    expect(counted).toBeGreaterThan(6_001);
  });

  it("and does not hold up an agent-sized prompt, which is counted while the enormous one still runs", async () => {
    const started = new Promise<void>((resolve) => {
      counting.onStart = resolve;
    });
    const before = counting.finished;
    const client = new Anthropic({ apiKey: "unused", baseURL: roomy.url, maxRetries: 0 });
    const enormous = client.messages.countTokens({ model: TEST_MODEL, messages: [user("word ".repeat(1_500_000))] });
    await started;
    const agentSized = await client.messages.countTokens({ model: TEST_MODEL, messages: [user("word ".repeat(40_000))] });
    expect(counting.finished - before).toBe(1);
    expect(agentSized.input_tokens).toBeGreaterThan(40_000);
    await enormous;
    expect(counting.finished - before).toBe(2);
  });
});

// That such a body is refused before it is parsed and validated on the event loop is shown in input-caps.test.ts
// (a body whose entries would fail validation is refused for its size); this is the 400 and /health beside it.
describe("a body far over the caps", () => {
  it("is refused with a 400 naming the limit while /health, asked once the body is sent, keeps answering", async () => {
    const answered: string[] = [];
    const body = JSON.stringify({ model: TEST_MODEL, messages: turns(200_000) });
    const refusal = new Promise<{ status: number; text: string }>((resolve, reject) => {
      const request = httpRequest(`${roomy.url}/v1/messages/count_tokens`, { method: "POST", agent: false, headers: { "content-type": "application/json" } }, (response) => {
        let text = "";
        response.setEncoding("utf8").on("data", (chunk) => (text += chunk)).on("end", () => {
          answered.push("refusal");
          resolve({ status: response.statusCode!, text });
        });
      });
      request.on("error", reject);
      request.end(body, () => {
        void fetch(`${roomy.url}/health`).then((health) => {
          answered.push(`health ${health.status}`);
        });
      });
    });
    const { status, text } = await refusal;
    expect(status).toBe(400);
    expect(JSON.parse(text).error.message).toMatch(/200000 messages exceed this server's limit of 10000/);
    await expect.poll(() => answered.length).toBe(2);
    expect(answered).toEqual(["health 200", "refusal"]);
  });
});

