/**
 * Remote models named differently from their upstream, as a user runs them: an upstream `kiln serve` process with
 * the real default model, and a front `kiln serve` process naming it otherwise. Without `#upstream-model` the front
 * uses the upstream's only model and says so at start-up; `#name` picks one; a name the upstream does not serve is
 * the surface's not-found error, never a 500.
 */
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawnServe, type ServeProcess } from "../helpers/spawn-serve.js";
import { TEST_MODEL } from "../helpers/server.js";

let upstream: ServeProcess;
let front: ServeProcess;

beforeAll(async () => {
  upstream = await spawnServe(["--parallel", "1", "--ctx-size", "1024"]);
  const url = `${upstream.url}/v1`;
  front = await spawnServe(["--model", `coder=openai+${url}`, "--model", `named=openai+${url}#${TEST_MODEL}`, "--model", `wrong=openai+${url}#no-such-model`]);
}, 120_000);

afterAll(async () => {
  for (const serve of [front, upstream]) {
    serve?.child.kill("SIGTERM");
    await serve?.exited;
  }
});

describe("remote models named differently from the upstream's", () => {
  it("uses the upstream's only model when none is named, and says so at start-up", async () => {
    expect(front.stderr()).toMatch(new RegExp(`^model coder \\(default\\): remote, .*upstream model ${TEST_MODEL} \\(the only model the upstream serves\\)`, "m"));
    expect(front.stderr()).toMatch(new RegExp(`^model named: remote, .*upstream model ${TEST_MODEL}, replicas`, "m"));
    const client = new Anthropic({ baseURL: front.url, apiKey: "unused", maxRetries: 0 });
    const message = await client.messages.create({ model: "coder", max_tokens: 2, messages: [{ role: "user", content: "Hi" }] });
    expect(message.model).toBe("coder");
    expect(message.usage.output_tokens).toBeGreaterThan(0);
  });

  it("sends the model named after # upstream", async () => {
    const client = new OpenAI({ baseURL: `${front.url}/v1`, apiKey: "unused", maxRetries: 0 });
    const completion = await client.chat.completions.create({ model: "named", max_tokens: 2, messages: [{ role: "user", content: "Hi" }] });
    expect(completion.model).toBe("named");
    expect(completion.choices[0]!.message.role).toBe("assistant");
  });

  it("answers the surface's not-found error when the upstream does not serve the model", async () => {
    const openai = new OpenAI({ baseURL: `${front.url}/v1`, apiKey: "unused", maxRetries: 0 });
    const failure = await openai.chat.completions.create({ model: "wrong", max_tokens: 2, messages: [{ role: "user", content: "Hi" }] }).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(OpenAI.NotFoundError);
    expect((failure as InstanceType<typeof OpenAI.NotFoundError>).code).toBe("model_not_found");
    expect((failure as Error).message).toMatch(/no-such-model/);

    const anthropic = new Anthropic({ baseURL: front.url, apiKey: "unused", maxRetries: 0 });
    const refused = await anthropic.messages.create({ model: "wrong", max_tokens: 2, messages: [{ role: "user", content: "Hi" }] }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(Anthropic.NotFoundError);
    expect((refused as InstanceType<typeof Anthropic.NotFoundError>).error).toMatchObject({ error: { type: "not_found_error" } });
    const counted = await anthropic.messages.countTokens({ model: "wrong", messages: [{ role: "user", content: "Hi" }] }).catch((error: unknown) => error);
    expect(counted).toBeInstanceOf(Anthropic.NotFoundError);
  });
});
