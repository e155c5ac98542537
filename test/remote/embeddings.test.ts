/**
 * Embeddings through a front kiln whose remote model's replica is a real `kiln serve` upstream running the real
 * default model: the front relays the upstream's vectors, usage and refusals in OpenAI's shape.
 */
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createEngine, type Engine } from "../../src/engine/index.js";
import { createServer, type ListeningServer } from "../../src/server/app.js";
import { startTestServer, TEST_MODEL, type TestServer } from "../helpers/server.js";

const FRONT_MODEL = "team-embedder";
let upstream: TestServer;
let frontEngine: Engine;
let front: ListeningServer;

beforeAll(async () => {
  upstream = await startTestServer({ parallel: 1 });
  frontEngine = await createEngine({ models: [], remoteModels: [{ id: FRONT_MODEL, upstreamModel: TEST_MODEL, replicas: [{ url: `${upstream.url}/v1` }] }] });
  front = await createServer(frontEngine).listen({ host: "127.0.0.1", port: 0 });
});

afterAll(async () => {
  await front?.close();
  await frontEngine?.close();
  await upstream?.close();
});

const client = (url: string) => new OpenAI({ apiKey: "none", baseURL: `${url}/v1`, maxRetries: 0 });

describe("embeddings on a remote model", { timeout: 300_000 }, () => {
  it("relays the upstream's vectors and usage in the inputs' order", async () => {
    const input = ["The cat sat on the mat.", "Quarterly revenue rose.", "The cat sat on the mat."];
    const relayed = await client(front.url).embeddings.create({ model: FRONT_MODEL, input, encoding_format: "float" });
    const direct = await client(upstream.url).embeddings.create({ model: TEST_MODEL, input, encoding_format: "float" });
    expect(relayed).toMatchObject({ model: FRONT_MODEL, usage: direct.usage });
    expect(relayed.data.map((item) => item.index)).toEqual([0, 1, 2]);
    relayed.data.forEach((item, i) => {
      const upstreamVector = direct.data[i]!.embedding;
      expect(item.embedding).toHaveLength(upstreamVector.length);
      expect(Math.max(...item.embedding.map((x, j) => Math.abs(x - upstreamVector[j]!)))).toBeLessThan(1e-12);
    });
    expect(relayed.data[2]!.embedding).toEqual(relayed.data[0]!.embedding);
  });

  it("passes the upstream's refusal on as a 400, and refuses an empty input itself", async () => {
    await expect(client(front.url).embeddings.create({ model: FRONT_MODEL, input: "x", dimensions: 8 }))
      .rejects.toMatchObject({ status: 400, message: expect.stringContaining("cannot shorten them") });
    await expect(client(front.url).embeddings.create({ model: FRONT_MODEL, input: ["a", ""] }))
      .rejects.toMatchObject({ status: 400, param: "input.1" });
  });
});
