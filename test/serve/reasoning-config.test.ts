/**
 * The per-model reasoning override of the configuration file, through the real `kiln serve` process: the entry's
 * `"reasoning": true` reaches the engine, so the same model file served twice splits `<think>` blocks under one
 * name and not under the other, and `/v1/models` says which.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeModelHome, spawnServe, type ServeProcess } from "../helpers/spawn-serve.js";

let serve: ServeProcess;

beforeAll(async () => {
  const home = makeModelHome();
  const config = join(home, "kiln.json");
  writeFileSync(config, JSON.stringify({
    noAuth: true,
    models: [{ name: "plain", source: "smollm2-135m" }, { name: "thinking", source: "smollm2-135m", reasoning: true }],
  }));
  serve = await spawnServe(["--config", config, "--parallel", "1", "--ctx-size", "1024", "--log-level", "error"], home);
}, 300_000);
afterAll(async () => {
  serve?.child.kill("SIGTERM");
  await serve?.exited;
});

/** A chat completion whose assistant turn the client began with `<think>`: generation continues inside the block. */
async function continueThought(model: string): Promise<{ content?: string | null; reasoning_content?: string }> {
  const response = await fetch(`${serve.url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      model, max_tokens: 8, temperature: 0,
      messages: [{ role: "user", content: "Name a colour." }, { role: "assistant", content: "<think>\nThe user wants" }],
    }),
  });
  expect(response.status).toBe(200);
  return (await response.json()).choices[0].message;
}

describe("the reasoning key of a model's config entry", { timeout: 300_000 }, () => {
  it("is what /v1/models reports, beside the template's own answer for the same file", async () => {
    const { data } = await (await fetch(`${serve.url}/v1/models`)).json() as { data: Array<{ id: string; details?: { reasoning?: boolean } }> };
    expect(Object.fromEntries(data.map((model) => [model.id, model.details?.reasoning]))).toEqual({ plain: false, thinking: true });
  });

  it("splits the continued thought out as reasoning only where it is set", async () => {
    const thinking = await continueThought("thinking");
    expect(thinking.reasoning_content?.length).toBeGreaterThan(0);
    expect(thinking.content ?? "").toBe("");
    const plain = await continueThought("plain");
    expect(plain.reasoning_content).toBeUndefined();
    // Greedy decoding of the same prompt: the same text, left in the answer (the thought goes on as the client began it).
    expect(plain.content).toBe(thinking.reasoning_content);
  });
});
