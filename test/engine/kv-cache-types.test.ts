/**
 * KV cache types on the real coder model: q8_0 K and V hold the same context in about half of f16's memory, greedy
 * output stays sensible (not byte-equal: the cache's numerics change), the RAM prefix cache reuses a prompt, and the
 * disk tier restores a q8_0 state into a q8_0 model but never into an f16 one (its key names the types).
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createEngine, type Engine, type KvCacheTypes } from "../../src/engine/index.js";
import { coderModelPath, testThreads } from "../helpers/real-model.js";
import { readEvents, startOf, textOf, userRequest } from "../helpers/stream-events.js";

const path = coderModelPath();
const Q8: KvCacheTypes = { k: "q8_0", v: "q8_0" };
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "kiln-kv-types-"));
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

function openCoder(kvCacheTypes?: KvCacheTypes): Promise<Engine> {
  return createEngine({
    models: [{ id: "coder", path: path! }], parallel: 1, ctxSize: 8192, threads: testThreads(), kvCacheTypes,
    prefixCacheDisk: { dir, maxBytes: 1024 ** 3, minTokens: 64 },
  });
}

const FUNCTION_PROMPT = "Write a Python function is_prime(n) that returns True when n is a prime number. Only the code.";

/** A prompt of a few hundred tokens, long enough for the disk tier to save. */
function longRequest() {
  const notes = Array.from({ length: 8 }, (_, i) => `# step ${i + 1}: read the input, check it, and keep the result in a list.`).join("\n");
  return userRequest("coder", `${notes}\nSummarise these steps in one sentence.`, { maxTokens: 8, sampling: { temperature: 0 } });
}

describe.skipIf(!path)("q8_0 K and V on the coder model", () => {
  it("holds the KV cache in about half of f16's memory and still writes sensible code greedily", async () => {
    const f16 = await openCoder();
    const f16Details = f16.listModels()[0]!.details!;
    await f16.close();
    expect(f16Details).toMatchObject({ kvCacheTypes: "f16/f16", kvCacheBytes: f16Details.kvCacheF16Bytes });

    const q8 = await openCoder(Q8);
    try {
      const details = q8.listModels()[0]!.details!;
      expect(details.kvCacheTypes).toBe("q8_0/q8_0");
      expect(details.kvCacheF16Bytes).toBe(f16Details.kvCacheBytes);
      const [kvF16, kvQ8] = [Number(f16Details.kvCacheBytes), Number(details.kvCacheBytes)];
      expect(kvQ8 / kvF16).toBeGreaterThan(0.45);
      expect(kvQ8 / kvF16).toBeLessThan(0.6);
      // node-llama-cpp's own estimate of the whole context (KV cache and compute buffers) falls by about as much.
      const contextSaving = Number(f16Details.contextMemory) - Number(details.contextMemory);
      expect(contextSaving / (kvF16 - kvQ8)).toBeGreaterThan(0.85);
      expect(contextSaving / (kvF16 - kvQ8)).toBeLessThan(1.15);
      const code = textOf(await readEvents(q8.generate(userRequest("coder", FUNCTION_PROMPT, { maxTokens: 96, sampling: { temperature: 0 } }))));
      expect(code).toMatch(/def is_prime\(n\)/);
      expect(code).toMatch(/return (True|False)/);
    } finally {
      await q8.close();
    }
  });

  it("reuses a prompt from RAM, and from disk only in a model with the same types", async () => {
    const q8 = await openCoder(Q8);
    try {
      // At most the chat template's opening is shared with what the first test left on disk.
      const cold = startOf(await readEvents(q8.generate(longRequest())));
      expect(cold.cachedInputTokens).toBeLessThan(cold.inputTokens / 2);
      expect(startOf(await readEvents(q8.generate(longRequest())))).toMatchObject({ cachedInputTokens: cold.inputTokens - 1, cacheTier: "ram" });
    } finally {
      await q8.close();
    }
    const restarted = await openCoder(Q8);
    try {
      const warm = startOf(await readEvents(restarted.generate(longRequest())));
      expect(warm).toMatchObject({ cacheTier: "disk", cachedInputTokens: warm.inputTokens - 1 });
    } finally {
      await restarted.close();
    }
    const f16 = await openCoder();
    try {
      expect(startOf(await readEvents(f16.generate(longRequest())))).toMatchObject({ cachedInputTokens: 0 });
    } finally {
      await f16.close();
    }
  }, 400_000);
});
