/**
 * GET /v1/models on the Anthropic surface with the official SDK 1.x (the key as `Authorization: Bearer`), in-process
 * and on a real loopback port. The listing reads only what the engine knows of its models (id, context window,
 * creation time), so the model is scripted: it answers under the real default model's id with a 2,048-token
 * context, the real-model tests' context.
 */
import Anthropic from "@anthropic-ai/sdk";
import { expect, it } from "vitest";
import { startScriptedEngine } from "../helpers/scripted-engine.js";
import { describeMatrix } from "../helpers/server-matrix.js";
import { TEST_MODEL } from "../helpers/server.js";

const KEY = "test-key-1";

describeMatrix("Anthropic models", { engine: () => startScriptedEngine({ contextSize: 2048 }), options: { apiKeys: [KEY] } }, (server) => {
  it("models list and retrieve return the served model with its context window", async () => {
    const client = new Anthropic({ apiKey: KEY, baseURL: server.url, maxRetries: 0, fetch: server.fetch });
    const models = [];
    for await (const model of client.models.list()) models.push(model);
    expect(models.map((m) => m.id)).toEqual([TEST_MODEL]);
    const one = await client.models.retrieve(TEST_MODEL);
    expect(one).toMatchObject({ type: "model", id: TEST_MODEL, max_input_tokens: 2048 });
    expect(Date.parse(one.created_at)).not.toBeNaN();
  });
});
