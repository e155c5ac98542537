/**
 * The prefix cache's disk tier on the real default model and real files: a restarted engine starts from disk with
 * the same greedy output as a cold run; truncated, corrupt and foreign files are removed and never loaded; the disk
 * budget drops the least recently used states; a prefill abandoned by its client is reused by the retry.
 */
import { appendFile, mkdtemp, readdir, readFile, rm, stat, truncate, utimes, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createEngine, type Engine, type EngineOptions, type GenerationEvent } from "../../src/engine/index.js";
import { realModelPath, testThreads } from "../helpers/real-model.js";
import { finishOf, readEvents, startOf, textOf, userRequest } from "../helpers/stream-events.js";

const MIN_TOKENS = 64;
let home: string;
const warnings: string[] = [];

beforeAll(async () => {
  home = await mkdtemp(join(tmpdir(), "kiln-prefix-disk-"));
});

afterAll(async () => {
  await rm(home, { recursive: true, force: true });
});

/** A fresh engine (as after a restart) on the default model whose disk tier lives in `dir`. */
function openEngine(dir: string, extra: Partial<EngineOptions> = {}): Promise<Engine> {
  return createEngine({
    models: [{ id: "smollm2-135m", path: realModelPath() }], parallel: 1, ctxSize: 1024, threads: testThreads(),
    prefixCacheDisk: { dir, maxBytes: 1024 ** 3, minTokens: MIN_TOKENS, warn: (message) => warnings.push(message) },
    ...extra,
  });
}

/** A request whose prompt is a couple of hundred tokens, distinct per `topic`. */
function longRequest(topic: string) {
  const notes = Array.from({ length: 12 }, (_, i) => `Note ${i + 1} about ${topic}: it matters for the answer.`).join(" ");
  return userRequest("smollm2-135m", `${notes} In one sentence, what are these notes about?`, { maxTokens: 8 });
}

/** Runs one request on a fresh engine and closes it (which saves what the disk tier lacks). */
async function runOnce(dir: string, request = longRequest("kilns"), extra: Partial<EngineOptions> = {}): Promise<GenerationEvent[]> {
  const engine = await openEngine(dir, extra);
  try {
    return await readEvents(engine.generate(request));
  } finally {
    await engine.close();
  }
}

/** Paths of the saved state files under `dir` (every model folder). */
async function stateFiles(dir: string): Promise<string[]> {
  const folders = await readdir(dir).catch(() => [] as string[]);
  const files = await Promise.all(folders.map(async (f) => (await readdir(join(dir, f))).filter((n) => n.endsWith(".state")).map((n) => join(dir, f, n))));
  return files.flat();
}

describe("the prefix cache's disk tier", () => {
  it("starts a restarted engine from disk, with the same greedy output as the cold run", async () => {
    const dir = join(home, "restart");
    const cold = await runOnce(dir);
    expect(startOf(cold).cachedInputTokens).toBe(0);
    expect(await stateFiles(dir)).toHaveLength(1);

    const engine = await openEngine(dir);
    try {
      expect(engine.stats().prefixCacheDiskBytes).toBeGreaterThan(0);
      const warm = await readEvents(engine.generate(longRequest("kilns")));
      expect(startOf(warm)).toMatchObject({ cachedInputTokens: startOf(cold).inputTokens - 1, cacheTier: "disk" });
      expect(finishOf(warm).usage).toMatchObject({ cachedInputTokens: startOf(cold).inputTokens - 1, cacheTier: "disk" });
      expect(textOf(warm)).toBe(textOf(cold));
      expect(textOf(cold).length).toBeGreaterThan(0);
      // The next request that extends it finds it in RAM.
      const again = await readEvents(engine.generate(longRequest("kilns")));
      expect(startOf(again).cacheTier).toBe("ram");
    } finally {
      await engine.close();
    }
  });

  it.each([
    ["truncated", (path: string) => stat(path).then((s) => truncate(path, Math.floor(s.size / 2)))],
    ["corrupt", async (path: string) => {
      const bytes = await readFile(path);
      bytes[bytes.length - 100] ^= 0xff;
      await writeFile(path, bytes);
    }],
    ["extended", (path: string) => appendFile(path, Buffer.alloc(16))],
  ])("removes a %s state file with a warning and evaluates the prompt in full", async (kind, damage) => {
    const dir = join(home, `damaged-${kind}`);
    const cold = await runOnce(dir);
    const [file] = await stateFiles(dir);
    const intactBytes = (await stat(file!)).size;
    await damage(file!);
    warnings.length = 0;
    const after = await runOnce(dir);
    expect(startOf(after).cachedInputTokens).toBe(0);
    expect(startOf(after).cacheTier).toBeUndefined();
    expect(textOf(after)).toBe(textOf(cold));
    expect(warnings.some((w) => w.includes("removed") && w.includes(file!.slice(0, -".state".length)))).toBe(true);
    // The damaged file is gone; the run saved an intact one in its place.
    const files = await stateFiles(dir);
    expect(files).toHaveLength(1);
    expect((await stat(files[0]!)).size).toBe(intactBytes);
  });

  it("never loads a state saved for other settings, even when its files are put in this model's folder", async () => {
    const dir = join(home, "foreign");
    await runOnce(dir, longRequest("kilns"), { ctxSize: 512 });
    const [foreign] = await stateFiles(dir);
    const engine = await openEngine(dir);
    await engine.close();
    const folder = (await readdir(dir)).find((f) => !foreign!.includes(f))!;
    const base = foreign!.slice(0, -".state".length);
    const name = base.split("/").at(-1)!;
    await writeFile(join(dir, folder, `${name}.state`), await readFile(`${base}.state`));
    await writeFile(join(dir, folder, `${name}.json`), await readFile(`${base}.json`));
    warnings.length = 0;
    const events = await runOnce(dir);
    expect(startOf(events).cachedInputTokens).toBe(0);
    expect(warnings.some((w) => w.includes(join(dir, folder, name)) && w.includes("another model"))).toBe(true);
    // What that folder holds now is this engine's own save of the same tokens.
    const record = JSON.parse(await readFile(join(dir, folder, `${name}.json`), "utf8"));
    expect(record.key.contextSize).toBe(1024);
  });

  it("keeps the disk within its budget, dropping the least recently used states", async () => {
    const probe = join(home, "probe");
    await runOnce(probe, longRequest("topic A"));
    const [probeFile] = await stateFiles(probe);
    const oneState = (await stat(probeFile!)).size;
    const dir = join(home, "bounded");
    const maxBytes = Math.floor(oneState * 2.5);
    const engine = await openEngine(dir, { prefixCacheDisk: { dir, maxBytes, minTokens: MIN_TOKENS, warn: () => {} } });
    try {
      for (const topic of ["topic A", "topic B", "topic C", "topic D"]) await readEvents(engine.generate(longRequest(topic)));
    } finally {
      await engine.close();
    }
    const files = await stateFiles(dir);
    const sizes = await Promise.all(files.map(async (f) => (await stat(f)).size + (await stat(`${f.slice(0, -".state".length)}.json`)).size));
    expect(files.length).toBe(2);
    expect(sizes.reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(maxBytes);
    // The newest conversation survives a restart whole; of the oldest only the chat template's opening is found.
    const bounded = { prefixCacheDisk: { dir, maxBytes, minTokens: MIN_TOKENS, warn: () => {} } };
    const latest = await runOnce(dir, longRequest("topic D"), bounded);
    expect(startOf(latest)).toMatchObject({ cachedInputTokens: startOf(latest).inputTokens - 1, cacheTier: "disk" });
    const oldest = await runOnce(dir, longRequest("topic A"), bounded);
    expect(startOf(oldest).cachedInputTokens).toBeLessThan(startOf(oldest).inputTokens / 2);
  }, 600_000);

  it("removes a state file whose record never came (a crash between the writes) once it is a minute old", async () => {
    const dir = join(home, "orphans");
    await (await openEngine(dir)).close();
    const [folder] = await readdir(dir);
    const old = join(dir, folder!, "old.state");
    const fresh = join(dir, folder!, "fresh.state");
    await writeFile(old, "x");
    await writeFile(fresh, "x");
    const twoMinutesAgo = new Date(Date.now() - 120_000);
    await utimes(old, twoMinutesAgo, twoMinutesAgo);
    await (await openEngine(dir)).close();
    expect(await readdir(join(dir, folder!))).toEqual(["fresh.state"]);
  });

  it("answers normally when a save cannot be written (as on a full disk), with a warning", async () => {
    const dir = join(home, "unwritable");
    const engine = await openEngine(dir);
    try {
      // The model's folder becomes a plain file: every write into it fails.
      const [folder] = await readdir(dir);
      await rm(join(dir, folder!), { recursive: true });
      await writeFile(join(dir, folder!), "");
      warnings.length = 0;
      const events = await readEvents(engine.generate(longRequest("full disks")));
      expect(finishOf(events).reason).not.toBe("error");
      expect(textOf(events).length).toBeGreaterThan(0);
    } finally {
      await engine.close();
    }
    expect(warnings.some((w) => w.includes("could not save"))).toBe(true);
  });

  it("turns off with the prefix cache", async () => {
    const dir = join(home, "off");
    const events = await runOnce(dir, longRequest("kilns"), { prefixCache: false });
    expect(startOf(events).cachedInputTokens).toBe(0);
    expect(await stateFiles(dir)).toHaveLength(0);
  });
});

describe("choosing between the tiers", () => {
  it("keeps the prefix in RAM when the disk's is only a few tokens longer (a state load costs more than they do)", async () => {
    const dir = join(home, "tiers");
    const notes = Array.from({ length: 12 }, (_, i) => `Note ${i + 1} about tiers: it matters for the answer.`).join(" ");
    const ask = (question: string) => userRequest("smollm2-135m", `${notes} ${question}`, { maxTokens: 4 });
    await runOnce(dir, ask("Question: what color is the sky over the kilns at noon?"));
    const engine = await openEngine(dir);
    try {
      // The notes come from disk; the next question shares a few more tokens with the saved state than with RAM.
      expect(startOf(await readEvents(engine.generate(ask("Summarize.")))).cacheTier).toBe("disk");
      const next = startOf(await readEvents(engine.generate(ask("Question: what time is it?"))));
      expect(next.cacheTier).toBe("ram");
      expect(next.cachedInputTokens).toBeGreaterThan(MIN_TOKENS);
    } finally {
      await engine.close();
    }
  });
});

describe("a conversation being saved to disk", () => {
  it("is found by its next turn, which waits for the save instead of starting over on a free sequence", async () => {
    const engine = await openEngine(join(home, "next-turn"), { parallel: 2 });
    try {
      const turn = longRequest("agents");
      const first = await readEvents(engine.generate(turn));
      // The first turn's release queues a save of its sequence for the next macrotask; the agent's next turn
      // arrives while it is written.
      await new Promise((resolve) => setImmediate(resolve));
      const next = await readEvents(engine.generate({
        ...turn,
        messages: [...turn.messages, { role: "assistant", parts: [{ type: "text", text: textOf(first) }] },
          { role: "user", parts: [{ type: "text", text: "And in one word?" }] }],
      }));
      expect(startOf(next).cacheTier).toBe("ram");
      expect(startOf(next).cachedInputTokens).toBeGreaterThanOrEqual(startOf(first).inputTokens);
    } finally {
      await engine.close();
    }
  });
});

describe("an abandoned prefill", () => {
  it("is reused by the client's retry, which waits for it instead of starting over on a free sequence", async () => {
    const engine = await openEngine(join(home, "abandoned-ram"), { parallel: 2 });
    try {
      const abort = new AbortController();
      const first = engine.generate(longRequest("retries"), { signal: abort.signal })[Symbol.asyncIterator]();
      expect((await first.next()).value).toMatchObject({ type: "start", cachedInputTokens: 0 });
      abort.abort();
      // The retry comes while the abandoned request may still be evaluating (its stream is read on in the background).
      const rest = (async () => { while (!(await first.next()).done); })();
      const retry = await readEvents(engine.generate(longRequest("retries")));
      await rest;
      expect(startOf(retry).cachedInputTokens).toBeGreaterThan(0);
      expect(startOf(retry).cachedInputTokens).toBeLessThan(startOf(retry).inputTokens);
      expect(startOf(retry).cacheTier).toBe("ram");
    } finally {
      await engine.close();
    }
  });

  it("is saved to disk when long, so a retry after a restart starts from disk", async () => {
    const dir = join(home, "abandoned-disk");
    // Aborted at its start, the request evaluates only its first prompt chunk (here all of the prompt but its last
    // token, which fits one step), and generates nothing.
    const small = { parallel: 2, prefixCacheDisk: { dir, maxBytes: 1024 ** 3, minTokens: 16, warn: () => {} } };
    const engine = await openEngine(dir, small);
    try {
      const abort = new AbortController();
      const stream = engine.generate(longRequest("restarts"), { signal: abort.signal });
      for await (const event of stream) {
        if (event.type === "start") abort.abort();
      }
    } finally {
      await engine.close();
    }
    const retry = await runOnce(dir, longRequest("restarts"), small);
    expect(startOf(retry).cachedInputTokens).toBeGreaterThan(0);
    expect(startOf(retry).cacheTier).toBe("disk");
  });
});
