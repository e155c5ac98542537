/**
 * Models on demand in a real `kiln serve` with the real default and coder models in its store and a budget of one
 * loaded model: a request for a stored, unloaded model answers 200; alternating requests for the two models both
 * succeed, the second waiting for the first's stream to end rather than cutting it; a request's keep_alive unloads
 * its model when idle; a file that fails to load answers a clear error, from memory the second time; `kiln ps` and
 * /v1/models show what is loaded.
 */
import { symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { coderModelPath } from "../helpers/real-model.js";
import { makeModelHome, runKilnCli, spawnServe, type ServeProcess } from "../helpers/spawn-serve.js";

const coder = coderModelPath();
const CODER = "qwen2.5-coder-0.5b";
let serve: ServeProcess;
let openai: OpenAI;
let anthropic: Anthropic;

beforeAll(async () => {
  const home = makeModelHome();
  symlinkSync(coder!, join(home, "models", `${CODER}.gguf`));
  writeFileSync(join(home, "models", "broken.gguf"), "this is plain text, not a model\n");
  serve = await spawnServe(["--max-loaded-models", "1", "--ctx-size", "1024", "--parallel", "2"], home);
  openai = new OpenAI({ baseURL: `${serve.url}/v1`, apiKey: "unused", maxRetries: 0 });
  anthropic = new Anthropic({ baseURL: serve.url, apiKey: "unused", maxRetries: 0 });
});

afterAll(async () => {
  serve?.child.kill("SIGTERM");
  await serve?.exited;
});

interface Listed { id: string; details: { loaded: boolean; memory?: number; unloadsAt?: string; loadError?: string; stepCostAtLoad?: object } }

async function listed(): Promise<Record<string, Listed["details"]>> {
  const body = (await (await fetch(`${serve.url}/v1/models`)).json()) as { data: Listed[] };
  return Object.fromEntries(body.data.map((m) => [m.id, m.details]));
}

describe.skipIf(!coder)("kiln serve with models on demand and one model loaded at most", () => {
  it("lists every stored model, the default one loaded at start and the others not", async () => {
    const models = await listed();
    expect(Object.keys(models).sort()).toEqual(["broken", CODER, "smollm2-135m"]);
    // Loaded at start, it was warmed up: its step cost was measured before it served.
    expect(models["smollm2-135m"]).toMatchObject({ loaded: true, memory: expect.any(Number), stepCostAtLoad: expect.any(Object) });
    expect(models[CODER]).toMatchObject({ loaded: false });
    expect(serve.stderr()).toContain("models on demand: every model in the store, unloaded after 5m idle, at most 1 loaded");
    // A catalog model this store lacks is not pulled without --pull-on-demand.
    const missing = await openai.chat.completions.create({ model: "qwen2.5-coder-1.5b", max_tokens: 4, messages: [{ role: "user", content: "Hi" }] }).catch((error: unknown) => error);
    expect(missing).toMatchObject({ status: 404, code: "model_not_found" });
  });

  it("answers 200 for a stored, unloaded model, unloading the idle default model to make room", async () => {
    const completion = await openai.chat.completions.create({ model: CODER, max_tokens: 16, temperature: 0, messages: [{ role: "user", content: "Write a Python function that adds two numbers." }] });
    expect(completion.model).toBe(CODER);
    expect(completion.choices[0]!.message.content).toMatch(/def |return|\+/);
    const models = await listed();
    expect([models[CODER]!.loaded, models["smollm2-135m"]!.loaded]).toEqual([true, false]);
    // Loaded for a waiting request, it skipped the warm-up: its planner fits the step cost from its own steps.
    expect(models[CODER]).not.toHaveProperty("stepCostAtLoad");
  });

  it("alternates between the two models, each waiting for the other's request in flight to finish", async () => {
    const stream = anthropic.messages.stream({ model: "smollm2-135m", max_tokens: 48, messages: [{ role: "user", content: "Count from one to twenty in words." }] });
    let deltas = 0;
    stream.on("text", () => { deltas += 1; });
    await vi.waitFor(() => expect(deltas).toBeGreaterThan(1), { timeout: 60_000, interval: 50 });
    // The coder model needs the only place, held by the stream: it waits and answers once the stream has ended.
    const waiting = openai.chat.completions.create({ model: CODER, max_tokens: 8, messages: [{ role: "user", content: "Say hi." }] });
    const message = await stream.finalMessage();
    expect(["end_turn", "max_tokens"]).toContain(message.stop_reason);
    expect(message.usage.output_tokens).toBeGreaterThan(deltas - 1);
    const answered = await waiting;
    expect(answered.choices[0]!.message.content?.length).toBeGreaterThan(0);
    const models = await listed();
    expect([models[CODER]!.loaded, models["smollm2-135m"]!.loaded]).toEqual([true, false]);
    // Loaded for a waiting request, it skipped the warm-up: its planner fits the step cost from its own steps.
    expect(models[CODER]).not.toHaveProperty("stepCostAtLoad");
  });

  it("shows the loaded model in kiln ps, with the others on demand", async () => {
    const ps = await runKilnCli(serve.home, ["ps", "--url", serve.url]);
    expect(ps.code, ps.stderr).toBe(0);
    expect(ps.stdout).toMatch(/^MODEL\s+BACKEND\s+MEMORY\s+CONTEXT\s+SEQUENCES\s+IDLE\s+UNLOADS\s+WHERE$/m);
    expect(ps.stdout).toMatch(new RegExp(`^${CODER}\\s+llama-cpp\\s+\\d+ MiB\\s+1024\\s+2\\s+\\S+\\s+in \\d\\S*\\s+\\d+ layers on the CPU`, "m"));
    expect(ps.stdout).toContain("loaded on demand: broken, smollm2-135m");
  });

  it("unloads a model once the keep_alive its request gave has passed", async () => {
    const body = { model: "smollm2-135m", max_tokens: 4, messages: [{ role: "user" as const, content: "Hi" }], keep_alive: "1s" };
    await anthropic.messages.create(body as Anthropic.MessageCreateParamsNonStreaming);
    expect((await listed())["smollm2-135m"]).toMatchObject({ loaded: true, unloadsAt: expect.stringMatching(/^\d{4}-/) });
    await vi.waitFor(async () => expect((await listed())["smollm2-135m"]!.loaded).toBe(false), { timeout: 30_000, interval: 200 });
  });

  it("refuses a bad keep_alive in the surface's own error shape", async () => {
    const body = { model: "smollm2-135m", max_tokens: 4, messages: [{ role: "user", content: "Hi" }], keep_alive: "soon" };
    const response = await fetch(`${serve.url}/v1/messages`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ type: "error", error: { type: "invalid_request_error", message: expect.stringContaining("keep_alive") } });
  });

  it("answers a model that fails to load with a clear error, and from memory the second time", async () => {
    for (let i = 0; i < 2; i++) {
      const failed = await openai.chat.completions.create({ model: "broken", max_tokens: 4, messages: [{ role: "user", content: "Hi" }] }).catch((error: unknown) => error);
      expect(failed).toMatchObject({ status: 500, message: expect.stringContaining("model broken failed to load") });
    }
    // One load, warned about once; the second request is answered from memory.
    expect(serve.stderr().match(/warning: model broken failed to load/g)).toHaveLength(1);
    expect((await listed()).broken).toMatchObject({ loaded: false, loadError: expect.stringContaining("broken.gguf") });
  });
});
