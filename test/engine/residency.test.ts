/**
 * Models on demand through the engine, on the scripted backend (loads that cost nothing, a gate that holds a request
 * in flight): loading on the first request, keep-alive, the budget of loaded models with least-recently-used
 * eviction, waiting and its bound, and a failed load answered from memory.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { createScriptGate } from "../../src/engine/backends/scripted/script-gate.js";
import { createEngine, type Engine, type EngineOptions, type OnDemandModel, type ScriptedModelSpec, type ScriptGate } from "../../src/engine/index.js";
import { eventsPath } from "../helpers/golden.js";
import { finishOf, readEvents, readInBackground, userRequest } from "../helpers/stream-events.js";

let engine: Engine | undefined;

afterEach(async () => {
  await engine?.close();
  engine = undefined;
});

/** On-demand scripted models; `resolves` counts each model's loads. */
function offer(ids: string[], options: { gate?: ScriptGate; broken?: string; loading?: Promise<void> } = {}) {
  const resolves = new Map<string, number>();
  const models: OnDemandModel[] = ids.map((id) => ({
    id,
    backend: "scripted",
    fileSize: 1000,
    resolve: async (): Promise<ScriptedModelSpec> => {
      resolves.set(id, (resolves.get(id) ?? 0) + 1);
      await options.loading;
      if (id === options.broken) throw new Error(`${id}.gguf is not a model`);
      return { id, events: eventsPath("anthropic", "text"), gate: options.gate };
    },
  }));
  return { resolves, onDemand: { find: (name: string) => models.find((m) => m.id === name), list: () => models } };
}

async function open(ids: string[], options: Partial<EngineOptions> & { gate?: ScriptGate; broken?: string; loading?: Promise<void> } = {}) {
  const { resolves, onDemand } = offer(ids, options);
  engine = await createEngine({ models: [], onDemand, ...options });
  return { engine, resolves };
}

const loaded = (engine: Engine, id: string) => engine.findModel(id)?.details?.loaded;

describe("models on demand", () => {
  it("lists an offered model unloaded, loads it on the first request and keeps it for the next", async () => {
    const { engine, resolves } = await open(["alpha"]);
    expect(engine.listModels().map((m) => [m.id, m.details?.loaded])).toEqual([["alpha", false]]);
    expect(finishOf(await readEvents(engine.generate(userRequest("alpha", "hi")))).reason).toBe("stop");
    expect(engine.findModel("alpha")?.details).toMatchObject({ loaded: true, requests: 0, unloadsAt: expect.any(String) });
    await readEvents(engine.generate(userRequest("alpha", "again")));
    expect(resolves.get("alpha")).toBe(1);
  });

  it("answers an unknown name with not_found", async () => {
    const { engine } = await open(["alpha"]);
    await expect(readEvents(engine.generate(userRequest("nope", "hi")))).rejects.toMatchObject({ code: "not_found" });
  });

  it("unloads after each request with keep-alive 0, and a request's keep_alive overrides the default", async () => {
    const { engine } = await open(["alpha", "beta"], { keepAliveMs: 0 });
    await readEvents(engine.generate(userRequest("alpha", "hi")));
    await vi.waitFor(() => expect(loaded(engine, "alpha")).toBe(false));
    await readEvents(engine.generate(userRequest("beta", "hi"), { keepAliveMs: -1 }));
    expect(engine.findModel("beta")?.details).toMatchObject({ loaded: true, unloadsAt: "never" });
  });

  it("unloads an idle model once its keep-alive has passed", async () => {
    const { engine } = await open(["alpha"], { keepAliveMs: 20 });
    await readEvents(engine.generate(userRequest("alpha", "hi")));
    await vi.waitFor(() => expect(loaded(engine, "alpha")).toBe(false), { timeout: 5000 });
  });

  it("never unloads a declared model", async () => {
    const { onDemand } = offer([]);
    engine = await createEngine({ models: [], onDemand, keepAliveMs: 0, scriptedModels: [{ id: "pinned", events: eventsPath("anthropic", "text") }] });
    await readEvents(engine.generate(userRequest("pinned", "hi"), { keepAliveMs: 0 }));
    expect(engine.findModel("pinned")?.details).toMatchObject({ loaded: true, unloadsAt: "never" });
  });
});

describe("a budget of one loaded model", () => {
  it("loads the other model only once the request in flight has finished, and that request runs to its end", async () => {
    const gate = createScriptGate();
    const { engine } = await open(["alpha", "beta"], { maxLoadedModels: 1, gate });
    gate.hold(1);
    const first = readInBackground(engine.generate(userRequest("alpha", "hi")));
    await vi.waitFor(() => expect(engine.findModel("alpha")?.details).toMatchObject({ loaded: true, requests: 1 }));
    const second = readEvents(engine.generate(userRequest("beta", "hi")));
    // beta waits: alpha is held by a request, so it cannot be unloaded.
    await new Promise((resolve) => setImmediate(resolve));
    expect(loaded(engine, "beta")).toBe(false);
    expect(loaded(engine, "alpha")).toBe(true);
    gate.open();
    expect(finishOf(await first.done).reason).toBe("stop");
    expect(finishOf(await second).reason).toBe("stop");
    expect([loaded(engine, "alpha"), loaded(engine, "beta")]).toEqual([false, true]);
    // And back: alpha evicts the idle beta.
    expect(finishOf(await readEvents(engine.generate(userRequest("alpha", "hi")))).reason).toBe("stop");
    expect([loaded(engine, "alpha"), loaded(engine, "beta")]).toEqual([true, false]);
  });

  it("refuses with overloaded and a retry hint when no room appears in time", async () => {
    const gate = createScriptGate();
    const { engine } = await open(["alpha", "beta"], { maxLoadedModels: 1, gate, loadTimeoutMs: 50 });
    gate.hold(1);
    const first = readInBackground(engine.generate(userRequest("alpha", "hi")));
    await vi.waitFor(() => expect(loaded(engine, "alpha")).toBe(true));
    await expect(readEvents(engine.generate(userRequest("beta", "hi")))).rejects.toMatchObject({ code: "overloaded", details: { retryAfter: expect.any(Number) } });
    gate.open();
    expect(finishOf(await first.done).reason).toBe("stop");
  });

  it("evicts by memory too: the least recently used idle model goes first", async () => {
    const { engine } = await open(["alpha", "beta", "gamma"], { memoryBudget: 2500 });
    for (const id of ["alpha", "beta", "alpha", "gamma"]) await readEvents(engine.generate(userRequest(id, "hi")));
    expect(["alpha", "beta", "gamma"].map((id) => loaded(engine, id))).toEqual([true, false, true]);
  });

  it("refuses a model larger than the whole budget, saying so", async () => {
    const { engine } = await open(["alpha"], { memoryBudget: 500 });
    await expect(readEvents(engine.generate(userRequest("alpha", "hi")))).rejects.toMatchObject({ message: expect.stringContaining("more than the memory budget") });
  });
});

describe("requests that arrive while their model loads", () => {
  it("wait for the load, as many as the queue holds; more are refused at once, and an aborted one leaves", async () => {
    let finishLoad = () => {};
    const loading = new Promise<void>((resolve) => { finishLoad = resolve; });
    const { engine } = await open(["alpha"], { queue: 2, loading });
    const first = readEvents(engine.generate(userRequest("alpha", "hi")));
    const aborter = new AbortController();
    const aborted = readEvents(engine.generate(userRequest("alpha", "hi"), { signal: aborter.signal }));
    await new Promise((resolve) => setImmediate(resolve));
    await expect(readEvents(engine.generate(userRequest("alpha", "hi")))).rejects.toMatchObject({ code: "overloaded", details: { retryAfter: expect.any(Number) } });
    aborter.abort();
    await expect(aborted).rejects.toMatchObject({ code: "aborted" });
    expect(engine.findModel("alpha")?.details).toMatchObject({ loaded: false });
    finishLoad();
    expect(finishOf(await first).reason).toBe("stop");
    expect(engine.findModel("alpha")?.details).toMatchObject({ loaded: true, requests: 0 });
  });
});

describe("a model that fails to load", () => {
  it("answers with the cause, and from memory until it is tried again", async () => {
    const { engine, resolves } = await open(["broken"], { broken: "broken", loadFailureMemoryMs: 60_000 });
    for (let i = 0; i < 2; i++) {
      await expect(readEvents(engine.generate(userRequest("broken", "hi")))).rejects.toMatchObject({ message: expect.stringContaining("broken failed to load: broken.gguf is not a model") });
    }
    expect(resolves.get("broken")).toBe(1);
    expect(engine.findModel("broken")?.details).toMatchObject({ loaded: false, loadError: expect.stringContaining("not a model") });
  });

  it("is tried again once the failure is forgotten", async () => {
    const { engine, resolves } = await open(["broken"], { broken: "broken", loadFailureMemoryMs: 0 });
    for (let i = 0; i < 2; i++) await expect(readEvents(engine.generate(userRequest("broken", "hi")))).rejects.toThrow();
    expect(resolves.get("broken")).toBe(2);
  });
});
