/**
 * `kiln serve --config` with remote models in front of a real kiln upstream (the real default model), and
 * `kiln ps` reading the running server: backends, contexts and each replica's live state.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, TEST_MODEL, type TestServer } from "../helpers/server.js";
import { makeModelHome, runKilnCli, spawnServe, type ServeProcess } from "../helpers/spawn-serve.js";

const FRONT_KEY = "front-secret-key";
// Nothing listens on the discard port: a replica that is down.
const DOWN_URL = "http://127.0.0.1:9/v1";
let upstream: TestServer;
let front: ServeProcess;

beforeAll(async () => {
  upstream = await startTestServer({ parallel: 1, ctxSize: 1024 });
  const home = makeModelHome();
  const config = join(home, "kiln.json");
  writeFileSync(config, JSON.stringify({
    apiKeys: [FRONT_KEY],
    models: [
      { name: "team", backend: "openai", upstreams: [`${upstream.url}/v1`], upstreamModel: TEST_MODEL, aliases: ["team-alias"], maxConcurrency: 1 },
      { name: "down", backend: "openai", upstreams: [DOWN_URL], contextWindow: 2048 },
    ],
  }));
  front = await spawnServe(["--config", config], home);
});

afterAll(async () => {
  front?.child.kill("SIGTERM");
  await front?.exited;
  await upstream?.close();
});

const ps = (...args: string[]) => runKilnCli(front.home, ["ps", "--url", front.url, ...args]);

describe("remote models from a config file", () => {
  it("prints each remote model with its replica URLs at start-up", () => {
    expect(front.stderr()).toContain(`model team (default) (also team-alias): remote, context 1024 tokens, upstream model smollm2-135m, replicas ${upstream.url}/v1`);
    expect(front.stderr()).toContain(`model down: remote, context 2048 tokens, replicas ${DOWN_URL}`);
  });

  it("serves through the upstream under the alias, with the config's API key", async () => {
    const client = new OpenAI({ baseURL: `${front.url}/v1`, apiKey: FRONT_KEY, maxRetries: 0 });
    const completion = await client.chat.completions.create({ model: "team-alias", max_tokens: 8, messages: [{ role: "user", content: "Say hi" }] });
    expect(completion.usage?.completion_tokens).toBeGreaterThan(0);
    const denied = new OpenAI({ baseURL: `${front.url}/v1`, apiKey: "wrong", maxRetries: 0 });
    await expect(denied.models.list()).rejects.toMatchObject({ status: 401 });
  });
});

describe("kiln ps", () => {
  it("shows each model's backend and every replica's state", async () => {
    const client = new OpenAI({ baseURL: `${front.url}/v1`, apiKey: FRONT_KEY, maxRetries: 0 });
    const failed = await client.chat.completions.create({ model: "down", max_tokens: 4, messages: [{ role: "user", content: "hi" }] }).catch((error: { status?: number }) => error);
    expect((failed as { status?: number }).status).toBeGreaterThanOrEqual(500);

    const result = await ps("--api-key", FRONT_KEY, "--json");
    expect(result.code, result.stderr).toBe(0);
    const models = JSON.parse(result.stdout) as { id: string; backend: string; context_length: number; details: { replicas: Record<string, unknown>[]; loaded: boolean } }[];
    // The declared models, then the store's, which load on demand.
    expect(models.map((m) => [m.id, m.backend, m.context_length, m.details.loaded])).toEqual([
      ["team", "remote", 1024, true], ["down", "remote", 2048, true], [TEST_MODEL, "llama-cpp", 8192, false],
    ]);
    expect(models[0]!.details.replicas).toEqual([expect.objectContaining({ url: `${upstream.url}/v1`, healthy: true, outstanding: 0, served: 1, failures: 0 })]);
    expect(models[1]!.details.replicas).toEqual([expect.objectContaining({ url: DOWN_URL, healthy: false, outstanding: 0, failures: 1, lastError: expect.any(String) })]);

    const table = await ps("--api-key", FRONT_KEY);
    expect(table.code, table.stderr).toBe(0);
    expect(table.stdout).toMatch(/^MODEL\s+BACKEND\s+MEMORY\s+CONTEXT\s+SEQUENCES\s+IDLE\s+UNLOADS$/m);
    // Declared models stay loaded; a remote model holds no memory here.
    expect(table.stdout).toMatch(/^team\s+remote\s+-\s+1024\s+-\s+\d+\S*\s+never$/m);
    expect(table.stdout).toContain(`loaded on demand: ${TEST_MODEL}`);
    expect(table.stdout).toMatch(new RegExp(`^${upstream.url}/v1\\s+yes\\s+0\\s+1\\s+0\\s+-$`, "m"));
    expect(table.stdout).toMatch(new RegExp(`^${DOWN_URL}\\s+no\\s+0\\s+\\d+\\s+1\\s+\\S`, "m"));
  });

  it("shows a local model's backend, and asks for a key when the server needs one", async () => {
    const local = await runKilnCli(front.home, ["ps", "--url", upstream.url, "--json"]);
    expect(local.code, local.stderr).toBe(0);
    expect(JSON.parse(local.stdout)).toEqual([expect.objectContaining({ id: TEST_MODEL, backend: "llama-cpp", context_length: 1024 })]);

    const refused = await ps();
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/API key/i);
  });
});
