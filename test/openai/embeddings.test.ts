/**
 * POST /v1/embeddings on a real server with the real default model and team features (stored keys, the usage
 * ledger, the request log), driven by the official openai SDK.
 */
import { getLlama, type Llama, type LlamaModel } from "node-llama-cpp";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createEngine } from "../../src/engine/index.js";
import { createServer } from "../../src/server/app.js";
import { createTeamFeatures, type TeamFeatures } from "../../src/team/team-features.js";
import { TeamDb } from "../../src/team/team-db.js";
import { queryUsage } from "../../src/team/usage-ledger.js";
import { realModelPath } from "../helpers/real-model.js";
import { startTestServer, TEST_MODEL, type TestServer } from "../helpers/server.js";
import { createStoredKey, makeHome } from "../helpers/team-cli.js";

let home: string;
let features: TeamFeatures;
let server: TestServer;
let client: OpenAI;
let clientKey: string;
const logLines: string[] = [];
/** An independent tokenizer (vocabulary only), for token-id inputs. */
let vocabulary: { llama: Llama; model: LlamaModel };

beforeAll(async () => {
  home = makeHome();
  features = createTeamFeatures({ home, logWrite: (line) => logLines.push(line), prettyLogs: false });
  server = await startTestServer({ features, parallel: 1, ctxSize: 1024 });
  clientKey = await createStoredKey(home, ["--name", "embedder"]);
  client = openai(clientKey);
  const llama = await getLlama({ build: "never", gpu: false });
  vocabulary = { llama, model: await llama.loadModel({ modelPath: realModelPath(), vocabOnly: true }) };
});

afterAll(async () => {
  await server?.close();
  await features?.close();
  await vocabulary?.model.dispose();
  await vocabulary?.llama.dispose();
});

function openai(apiKey: string, baseURL = `${server.url}/v1`): OpenAI {
  return new OpenAI({ apiKey, baseURL, maxRetries: 0 });
}

async function embed(input: string | string[] | number[] | number[][]): Promise<number[][]> {
  const response = await client.embeddings.create({ model: TEST_MODEL, input, encoding_format: "float" });
  return response.data.map((item) => item.embedding);
}

/** The vector length the GGUF declares (read by the independent tokenizer). */
function modelDimensions(): number {
  const size = vocabulary.model.fileInsights.embeddingVectorSize;
  if (!size) throw new Error("the GGUF declares no embedding length");
  return size;
}

const cosine = (a: number[], b: number[]) => a.reduce((sum, x, i) => sum + x * b[i]!, 0);
const norm = (vector: number[]) => Math.sqrt(cosine(vector, vector));

describe("embeddings", { timeout: 300_000 }, () => {
  it("embeds one string: a unit-length vector and its real token count", async () => {
    const text = "Kilns fire clay into ceramics.";
    const response = await client.embeddings.create({ model: TEST_MODEL, input: text, encoding_format: "float" });
    expect(response).toMatchObject({ object: "list", model: TEST_MODEL, data: [{ object: "embedding", index: 0 }] });
    const vector = response.data[0]!.embedding;
    expect(vector).toHaveLength(modelDimensions());
    expect(norm(vector)).toBeCloseTo(1, 6);
    // The model adds no BOS or EOS around an input, so its tokens are the text's.
    expect(response.usage).toEqual({ prompt_tokens: vocabulary.model.tokenize(text).length, total_tokens: vocabulary.model.tokenize(text).length });
  });

  it("embeds a batch of 32 inputs in one request, each as it would be alone", async () => {
    const texts = Array.from({ length: 32 }, (_, i) => `Note ${i}: the ${["kiln", "glaze", "clay", "wheel"][i % 4]} needs attention today.`);
    const response = await client.embeddings.create({ model: TEST_MODEL, input: texts, encoding_format: "float" });
    expect(response.data.map((item) => item.index)).toEqual(texts.map((_, i) => i));
    const tokens = texts.reduce((sum, text) => sum + vocabulary.model.tokenize(text).length, 0);
    expect(response.usage).toEqual({ prompt_tokens: tokens, total_tokens: tokens });
    for (const i of [0, 17, 31]) expect(response.data[i]!.embedding).toEqual((await embed(texts[i]!))[0]);
    expect(response.data[0]!.embedding).not.toEqual(response.data[1]!.embedding);
  });

  it("gives identical inputs identical vectors, within a request, across requests and as token ids", async () => {
    const text = "The same sentence, twice.";
    const [first, other, again] = await embed([text, "Something else entirely.", text]);
    expect(again).toEqual(first);
    expect(other).not.toEqual(first);
    expect((await embed(text))[0]).toEqual(first);
    const ids = [...vocabulary.model.tokenize(text)] as number[];
    expect(await embed(ids)).toEqual([first]);
    expect(await embed([ids, ids])).toEqual([first, first]);
  });

  it("sends base64 as the float32 bytes of the float vectors (the SDK's default, decoded by it)", async () => {
    const text = "Base64 carries the same numbers.";
    const [floats] = await embed(text);
    const decoded = await client.embeddings.create({ model: TEST_MODEL, input: text });
    expect(decoded.data[0]!.embedding).toEqual(floats!.map((x) => Math.fround(x)));
    const raw = await postJson("/v1/embeddings", { model: TEST_MODEL, input: text, encoding_format: "base64" });
    const base64 = (raw.body as { data: Array<{ embedding: string }> }).data[0]!.embedding;
    const bytes = Buffer.from(base64, "base64");
    expect(Array.from(new Float32Array(bytes.buffer, bytes.byteOffset, bytes.length / 4))).toEqual(decoded.data[0]!.embedding);
  });

  it("puts similar texts closer than unrelated ones", async () => {
    const [cat, kitten, revenue] = await embed(["The cat sat on the mat.", "A kitten is sitting on a rug.", "Quarterly revenue rose by eight percent."]);
    expect(cosine(cat!, kitten!)).toBeGreaterThan(cosine(cat!, revenue!));
    const [question, answer, landmark] = await embed([
      "How do I sort a list in Python?", "Use sorted(my_list) or my_list.sort() to order a Python list.", "The Eiffel Tower is in Paris.",
    ]);
    expect(cosine(question!, answer!)).toBeGreaterThan(cosine(question!, landmark!));
  });

  it("answers bad input with a 400 in OpenAI's shape, naming the field", async () => {
    const size = modelDimensions();
    const cases: Array<[Record<string, unknown>, string, RegExp]> = [
      [{ input: ["fine", ""] }, "input.1", /must not be empty/],
      [{ input: [[1, 2, 10_000_000]] }, "input.0", /outside the vocabulary/],
      [{ input: 42 }, "input", /Expected a string/],
      [{ input: [] }, "input", /Expected/],
      [{ input: "x", dimensions: 8 }, "dimensions", new RegExp(`cannot shorten them; omit dimensions or send ${size}`)],
      [{ input: "x", encoding_format: "int8" }, "encoding_format", /'float' or 'base64'/],
      [{ input: "word ".repeat(1100) }, "input", /maximum context length is 1023 tokens/],
    ];
    for (const [fields, param, message] of cases) {
      const { status, body } = await postJson("/v1/embeddings", { model: TEST_MODEL, ...fields });
      expect({ status, body }, JSON.stringify(fields).slice(0, 80)).toMatchObject({
        status: 400, body: { error: { type: "invalid_request_error", param, message: expect.stringMatching(message) } },
      });
    }
    await expect(client.embeddings.create({ model: TEST_MODEL, input: "x", dimensions: 8 })).rejects.toMatchObject({ status: 400, param: "dimensions" });
    expect((await client.embeddings.create({ model: TEST_MODEL, input: "x", dimensions: size })).data[0]!.embedding).toHaveLength(size);
    await expect(client.embeddings.create({ model: "no-such-model", input: "x" })).rejects.toMatchObject({ status: 404, code: "model_not_found" });
  });

  it("is served without /v1 too, with keys, scopes and rate limits like every route", async () => {
    const unversioned = await openai(clientKey, server.url).embeddings.create({ model: TEST_MODEL, input: "hi", encoding_format: "float" });
    expect(unversioned.data[0]!.embedding).toEqual((await embed("hi"))[0]);
    await expect(openai("sk-wrong").embeddings.create({ model: TEST_MODEL, input: "hi" })).rejects.toMatchObject({ status: 401, code: "invalid_api_key" });
    const scoped = await createStoredKey(home, ["--name", "other-model-only", "--models", "some-other-model"]);
    await expect(openai(scoped).embeddings.create({ model: TEST_MODEL, input: "hi" })).rejects.toMatchObject({ status: 403, type: "permission_error" });
    const limited = openai(await createStoredKey(home, ["--name", "one-per-minute", "--rpm", "1", "--tpm", "100000"]));
    const { response } = await limited.embeddings.create({ model: TEST_MODEL, input: "hi" }).withResponse();
    expect(response.headers.get("x-ratelimit-remaining-requests")).toBe("0");
    await expect(limited.embeddings.create({ model: TEST_MODEL, input: "hi" })).rejects.toMatchObject({ status: 429, code: "rate_limit_exceeded" });
  });

  it("records usage and a request log line per embedding request", async () => {
    const key = await createStoredKey(home, ["--name", "ledger"]);
    const metered = openai(key);
    const responses = [
      await metered.embeddings.create({ model: TEST_MODEL, input: "first", encoding_format: "float" }),
      await metered.embeddings.create({ model: TEST_MODEL, input: ["second", "third one"] }),
    ];
    await features.flush();
    const db = TeamDb.open(home);
    try {
      const tokens = responses.reduce((sum, response) => sum + response.usage.prompt_tokens, 0);
      expect(queryUsage(db, { key: "ledger" })).toEqual([
        expect.objectContaining({ model: TEST_MODEL, requests: 2, inputTokens: tokens, cachedInputTokens: 0, outputTokens: 0 }),
      ]);
    } finally {
      db.close();
    }
    const logged = logLines.map((line) => JSON.parse(line) as Record<string, unknown>).filter((entry) => entry.route === "/v1/embeddings" && entry.status === 200);
    expect(logged.at(-1)).toMatchObject({ method: "POST", model: TEST_MODEL, keyId: expect.stringMatching(/^key_/), inputTokens: responses[1]!.usage.prompt_tokens, outputTokens: 0 });
  });
});

describe("a client that leaves during a batch", { timeout: 300_000 }, () => {
  it("stops the batch at the next input, frees the slot and is logged as aborted", async () => {
    const leaving = new AbortController();
    const texts = Array.from({ length: 256 }, (_, i) => `Line ${i} of a long document that the client stops waiting for.`);
    const sent = postJson("/v1/embeddings", { model: TEST_MODEL, input: texts }, leaving.signal).catch((error: unknown) => error);
    await waitFor(() => server.engine.stats().activeSequences === 1, "the batch to take the slot");
    leaving.abort();
    expect(await sent).toMatchObject({ name: "AbortError" });
    await waitFor(() => logLines.some((line) => line.includes('"status":499') && line.includes("/v1/embeddings")), "the aborted request's log line");
    const entry = logLines.map((line) => JSON.parse(line) as Record<string, unknown>).find((e) => e.status === 499 && e.route === "/v1/embeddings");
    expect(entry).toMatchObject({ error: expect.stringMatching(/^aborted: /) });
    expect(server.engine.stats().activeSequences).toBe(0);
    expect((await embed("still serving"))[0]).toHaveLength(modelDimensions());
  });
});

describe("a model whose backend cannot embed", () => {
  it("is refused with a 400 naming the model", async () => {
    const engine = await createEngine({ models: [], scriptedModels: [{ id: "recording", events: [{ type: "start", model: "recording", inputTokens: 1, cachedInputTokens: 0 }] }] });
    const listening = await createServer(engine).listen({ host: "127.0.0.1", port: 0 });
    try {
      const refused = openai("unused", `${listening.url}/v1`).embeddings.create({ model: "recording", input: "hi" });
      await expect(refused).rejects.toMatchObject({ status: 400, param: "model", message: expect.stringContaining("recording cannot compute embeddings (its scripted backend does not embed)") });
    } finally {
      await listening.close();
      await engine.close();
    }
  });
});

/** Polls `condition` on each turn of the event loop, for at most two minutes (no timing is asserted). */
async function waitFor(condition: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 120_000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** A raw POST with the test key, for bodies the SDK's types would not send. */
async function postJson(path: string, body: unknown, signal?: AbortSignal): Promise<{ status: number; body: unknown }> {
  const response = await fetch(`${server.url}${path}`, {
    method: "POST",
    signal,
    headers: { authorization: `Bearer ${clientKey}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: await response.json() };
}
