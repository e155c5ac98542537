/**
 * `kiln chat --url`: the remote source turns a server's SSE back into GenerationEvents (Anthropic streams with the
 * chat's reader, OpenAI streams with the engine's remote-model mapper). Checked two ways: the server encoders'
 * golden streams must fold to the same result as the events they were encoded from, and a real `kiln serve` on
 * 127.0.0.1 with the real model must stream well-formed replies over both protocols.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { collectResult, type ChatResult, checkEventSequence, type GenerationEvent, toEngineError, type Engine } from "../../src/engine/index.js";
import { readSse } from "../../src/lib/read-sse.js";
import { createAnthropicStreamReader } from "../../src/chat/from-anthropic-stream.js";
import { readSseData, UpstreamEventMapper } from "../../src/engine/backends/remote/upstream-events.js";
import { createRemoteSource, type RemoteApi } from "../../src/chat/remote-source.js";
import { toOpenAIFinishReason } from "../../src/server/openai/wire/finish-reason.js";
import { listCases, readEvents } from "../helpers/golden.js";
import { startTestServer, TEST_MODEL, type TestServer } from "../helpers/server.js";
import { startScriptedEngine } from "../helpers/scripted-engine.js";
import { createServer, type ListeningServer } from "../../src/server/app.js";
import { readFileSync, existsSync } from "node:fs";
import { join } from "node:path";

const FIXTURES = join(import.meta.dirname, "..", "fixtures");

/** Feeds an SSE text through readSse in small pieces, as a network would deliver it. */
async function* eventsOfSse(text: string, api: RemoteApi): AsyncGenerator<GenerationEvent> {
  const bytes = new TextEncoder().encode(text);
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      for (let i = 0; i < bytes.length; i += 37) controller.enqueue(bytes.slice(i, i + 37));
      controller.close();
    },
  });
  if (api === "anthropic") {
    const read = createAnthropicStreamReader();
    for await (const sse of readSse(body)) if (sse.data) yield* read(JSON.parse(sse.data));
    return;
  }
  // As the remote model streams it; a failure after `start` becomes an error event, as the engine makes it.
  const mapper = new UpstreamEventMapper(TEST_MODEL);
  let started = false;
  try {
    for await (const data of readSseData(body)) {
      for (const event of mapper.map(JSON.parse(data))) {
        started = true;
        yield event;
      }
    }
    yield* mapper.finish();
  } catch (error) {
    if (!started) throw error;
    yield { type: "error", error: toEngineError(error) };
  }
}

/** What the chat shows of a result: blocks, reason and usage (ids of the wire and model names aside). */
async function outcome(events: AsyncIterable<GenerationEvent> | GenerationEvent[]): Promise<unknown> {
  const iterable = Array.isArray(events) ? (async function* () { yield* events; })() : events;
  try {
    const result: ChatResult = await collectResult(iterable);
    const blocks = result.blocks.map((block) => (block.type === "tool-call" ? { type: block.type, name: block.name, input: block.input } : { type: block.type, text: block.text }));
    return { blocks, reason: result.finishReason, stopSequence: result.stopSequence, usage: result.usage };
  } catch (error) {
    return { error: (error as Error).message };
  }
}

describe("the servers' golden streams read back to their events", () => {
  const cases = (surface: string, prefix: string) =>
    listCases(surface, prefix).filter((name) => existsSync(join(FIXTURES, surface, name, "stream.sse")));

  it.each(cases("anthropic", ""))("anthropic %s", async (name) => {
    const sse = readFileSync(join(FIXTURES, "anthropic", name, "stream.sse"), "utf8");
    const read: GenerationEvent[] = [];
    for await (const event of eventsOfSse(sse, "anthropic")) read.push(event);
    expect(checkEventSequence(read)).toEqual([]);
    expect(await outcome(read)).toEqual(await outcome(readEvents("anthropic", name)));
  });

  it.each(cases("openai", "chat-"))("openai %s", async (name) => {
    const sse = readFileSync(join(FIXTURES, "openai", name, "stream.sse"), "utf8");
    const read: GenerationEvent[] = [];
    for await (const event of eventsOfSse(sse, "openai")) read.push(event);
    expect(checkEventSequence(read)).toEqual([]);
    const expected = (await outcome(readEvents("openai", name))) as Record<string, any>;
    const actual = (await outcome(read)) as Record<string, any>;
    // The engine reports an upstream's in-band error as its own, naming where it came from.
    if (expected.error) expected.error = `upstream error: ${expected.error}`;
    else {
      // OpenAI's finish_reason is coarser (a turn with tool calls always says tool_calls), and usage only
      // travels when the request asked for it (the chat always does).
      const hasToolCalls = expected.blocks.some((block: { type: string }) => block.type === "tool-call");
      expected.reason = { stop: "stop", length: "length", tool_calls: "tool-calls" }[toOpenAIFinishReason(expected.reason, hasToolCalls)];
      delete expected.stopSequence;
      if (!/"usage":\{/.test(sse)) delete expected.usage, delete actual.usage;
    }
    expect(actual).toEqual(expected);
  });
});

describe("a real kiln server", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ parallel: 1, ctxSize: 2048 });
  });
  afterAll(async () => {
    await server?.close();
  });

  const request = { model: TEST_MODEL, messages: [{ role: "user" as const, parts: [{ type: "text" as const, text: "Name a colour." }] }], maxTokens: 5, sampling: { temperature: 0 } };

  it.each(["anthropic", "openai"] as const)("streams a well-formed reply over %s with real usage", async (api) => {
    const source = await createRemoteSource({ url: `${server.url}/v1/`, api });
    expect(source.model.id).toBe(TEST_MODEL);
    const events: GenerationEvent[] = [];
    for await (const event of source.generate(request, new AbortController().signal)) events.push(event);
    expect(checkEventSequence(events)).toEqual([]);
    expect(events.at(-1)).toMatchObject({ type: "finish", reason: "length", usage: { outputTokens: 5 } });
    const finish = events.at(-1) as Extract<GenerationEvent, { type: "finish" }>;
    expect(finish.usage.inputTokens).toBe(await server.engine.countTokens(request));
  });

  it("an unknown model is refused with the server's message", async () => {
    const source = await createRemoteSource({ url: server.url, api: "anthropic", model: "no-such-model" });
    const consume = async () => {
      for await (const _ of source.generate({ ...request, model: "no-such-model" }, new AbortController().signal)) void _;
    };
    await expect(consume()).rejects.toMatchObject({ code: "not_found" });
  });

  it("a server that is not there fails with a clear error", async () => {
    await expect(createRemoteSource({ url: "http://127.0.0.1:9", api: "openai" })).rejects.toMatchObject({ code: "backend_failure", message: expect.stringContaining("cannot reach") });
  });
});

describe("errors of an OpenAI-compatible server, read as kiln serve reads its replicas", () => {
  let failing: ListeningServer;
  let engine: Engine;
  beforeAll(async () => {
    engine = await startScriptedEngine({ recording: ["engine", "backend-failure"] });
    failing = await createServer(engine).listen({ host: "127.0.0.1", port: 0 });
  });
  afterAll(async () => {
    await failing?.close();
    await engine?.close();
  });

  it("a 5xx is overloaded (retryable), carrying the server's message", async () => {
    const source = await createRemoteSource({ url: failing.url, api: "openai" });
    const request = { model: TEST_MODEL, messages: [{ role: "user" as const, parts: [{ type: "text" as const, text: "Hi" }] }], maxTokens: 5 };
    const consume = async () => {
      for await (const _ of source.generate(request, new AbortController().signal)) void _;
    };
    await expect(consume()).rejects.toMatchObject({ code: "overloaded", message: expect.stringContaining("The model failed while decoding") });
    await source.close();
  });
});
