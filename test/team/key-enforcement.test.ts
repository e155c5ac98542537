/**
 * Stored keys enforced by a running server, driven by the official SDKs: keys made and revoked by the real CLI
 * while the server runs, scopes (403, filtered model lists) and per-key request limits with their headers (429 with
 * retry-after). These are decisions on the key, not on the model's output, so the model is scripted (it replays a
 * recorded reply, with its recorded token counts, under the real default model's id). One team home serves the
 * suite, so it runs on a real loopback port only. Usage rows, metrics and logged bodies of real generations are in
 * server.test.ts with the real model.
 */
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { afterAll, describe, expect, it } from "vitest";
import { createTeamFeatures } from "../../src/team/team-features.js";
import { startScriptedEngine } from "../helpers/scripted-engine.js";
import { describeMatrix } from "../helpers/server-matrix.js";
import { TEST_MODEL } from "../helpers/server.js";
import { createStoredKey, makeHome, runKiln } from "../helpers/team-cli.js";

const home = makeHome();
const logLines: string[] = [];
const issuedKeys: string[] = [];
const features = createTeamFeatures({ home, logWrite: (line) => logLines.push(line), prettyLogs: false });

// File-level: runs after the suite's own afterAll has closed the server, the order `kiln serve` uses on SIGTERM.
afterAll(() => features.close());

/** Creates a stored key through the real CLI while the server runs. */
async function createKey(...args: string[]): Promise<string> {
  const key = await createStoredKey(home, args);
  issuedKeys.push(key);
  return key;
}

async function statusOf(call: Promise<unknown>): Promise<number> {
  try {
    await call;
    return 200;
  } catch (error) {
    return (error as { status?: number }).status ?? -1;
  }
}

describeMatrix("stored keys on a running server", { engine: () => startScriptedEngine(), options: { features } }, (server) => {
  const anthropic = (key: string) => new Anthropic({ apiKey: key, baseURL: server.url, maxRetries: 0, fetch: server.fetch });
  const openai = (key: string) => new OpenAI({ apiKey: key, baseURL: `${server.url}/v1`, maxRetries: 0, fetch: server.fetch });
  const ask = (key: string) => anthropic(key).messages.create({ model: TEST_MODEL, max_tokens: 8, messages: [{ role: "user", content: "Say hi" }] });

  describe("keys", () => {
    it("accepts a key created while the server runs, and refuses it with 401 once revoked", async () => {
      const key = await createKey("--name", "revoke-me");
      expect((await ask(key)).usage.output_tokens).toBeGreaterThan(0);
      expect((await runKiln(home, ["keys", "revoke", "revoke-me"])).code).toBe(0);
      const error = await ask(key).catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(Anthropic.AuthenticationError);
      expect(await statusOf(openai(key).models.list())).toBe(401);
    });

    it("answers 403 for models outside a key's scope on both surfaces, and lists only the allowed ones", async () => {
      const other = await createKey("--name", "other-only", "--models", "some-other-model");
      const error = await ask(other).catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(Anthropic.PermissionDeniedError);
      expect((error as InstanceType<typeof Anthropic.PermissionDeniedError>).error).toMatchObject({ error: { type: "permission_error" } });
      const chat = openai(other).chat.completions.create({ model: TEST_MODEL, max_tokens: 4, messages: [{ role: "user", content: "hi" }] });
      expect(await statusOf(chat)).toBe(403);
      expect(await statusOf(anthropic(other).messages.countTokens({ model: TEST_MODEL, messages: [{ role: "user", content: "hi" }] }))).toBe(403);
      expect((await openai(other).models.list()).data).toEqual([]);

      const scoped = await createKey("--name", "test-model-only", "--models", TEST_MODEL);
      expect((await openai(scoped).models.list()).data.map((model) => model.id)).toEqual([TEST_MODEL]);
      expect((await ask(scoped)).model).toBe(TEST_MODEL);
    });

    it("limits requests per minute: rate-limit headers on every response, then 429 with retry-after", async () => {
      const key = await createKey("--name", "one-per-minute", "--rpm", "1", "--tpm", "100000");
      const { response } = await anthropic(key).messages.create({ model: TEST_MODEL, max_tokens: 4, messages: [{ role: "user", content: "hi" }] }).withResponse();
      const headers = response.headers;
      expect(headers.get("anthropic-ratelimit-requests-limit")).toBe("1");
      expect(headers.get("anthropic-ratelimit-requests-remaining")).toBe("0");
      expect(Date.parse(headers.get("anthropic-ratelimit-requests-reset")!)).toBeGreaterThan(Date.now());
      expect(headers.get("anthropic-ratelimit-tokens-limit")).toBe("100000");
      expect(Number(headers.get("anthropic-ratelimit-tokens-remaining"))).toBeLessThan(100000);
      expect(headers.get("x-ratelimit-limit-requests")).toBe("1");
      expect(headers.get("x-ratelimit-remaining-requests")).toBe("0");
      expect(headers.get("x-ratelimit-reset-requests")).toMatch(/^(\d+ms|\d+s|\d+m\d+s)$/);
      expect(headers.get("x-ratelimit-limit-tokens")).toBe("100000");

      const refused = (await ask(key).catch((caught: unknown) => caught)) as InstanceType<typeof Anthropic.RateLimitError>;
      expect(refused).toBeInstanceOf(Anthropic.RateLimitError);
      const retryAfter = Number(refused.headers?.get("retry-after"));
      expect(retryAfter).toBeGreaterThanOrEqual(1);
      expect(retryAfter).toBeLessThanOrEqual(60);
      expect(refused.headers?.get("anthropic-ratelimit-requests-remaining")).toBe("0");
      const chat = openai(key).chat.completions.create({ model: TEST_MODEL, max_tokens: 4, messages: [{ role: "user", content: "hi" }] });
      expect(await statusOf(chat)).toBe(429);
    });

    // A key sent as a credential must never reach the log, whatever the answer (200, 401, 403, 429).
    it("writes none of the keys it was sent into the request log", () => {
      expect(logLines.length).toBeGreaterThan(0);
      for (const issued of issuedKeys) expect(logLines.join("\n")).not.toContain(issued);
    });
  });
}, ["loopback"]);
