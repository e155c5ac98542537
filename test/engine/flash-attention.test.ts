/**
 * Flash attention on the real default model: "auto" leaves it to llama.cpp (which turns it on wherever the device
 * runs it), "off" turns it off, and the model's details say which was asked; a model without it writes what a model
 * with it writes, and the disk tier keeps states saved with and without it apart (llama.cpp lays the V cache out
 * differently and refuses the other's).
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createEngine, type Engine, type FlashAttentionChoice } from "../../src/engine/index.js";
import { realModelPath, testThreads } from "../helpers/real-model.js";
import { readEvents, startOf, textOf, userRequest } from "../helpers/stream-events.js";

let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "kiln-flash-attention-"));
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

function open(flashAttention?: FlashAttentionChoice): Promise<Engine> {
  return createEngine({
    models: [{ id: "m", path: realModelPath() }], parallel: 2, ctxSize: 2048, threads: testThreads(), flashAttention,
    prefixCacheDisk: { dir, maxBytes: 1024 ** 3, minTokens: 64 },
  });
}

/** A prompt of a few hundred tokens, long enough for the disk tier to save. */
function longRequest() {
  const notes = Array.from({ length: 12 }, (_, i) => `Step ${i + 1}: the potter wedges the clay, shapes a bowl and lets it dry.`).join("\n");
  return userRequest("m", `${notes}\nHow many steps are there?`, { maxTokens: 12, sampling: { temperature: 0 } });
}

describe("flash attention", () => {
  it("is llama.cpp's choice by default, off when asked, and the text is the model's either way", async () => {
    const auto = await open();
    let autoText: string;
    try {
      expect(auto.listModels()[0]!.details).toMatchObject({ flashAttention: "auto" });
      autoText = textOf(await readEvents(auto.generate(longRequest())));
    } finally {
      await auto.close();
    }
    const off = await open("off");
    try {
      expect(off.listModels()[0]!.details).toMatchObject({ flashAttention: false });
      const events = await readEvents(off.generate(longRequest()));
      // The state saved with llama.cpp's choice (on, on a CPU) is not loaded: its key names the setting.
      expect(startOf(events).cachedInputTokens).toBe(0);
      // Greedy text of a 135M model agrees for a dozen tokens whichever way attention is summed.
      expect(textOf(events)).toBe(autoText);
      expect(autoText.length).toBeGreaterThan(0);
    } finally {
      await off.close();
    }
  }, 240_000);

  it("keeps a state per setting on disk: each restarts from its own", async () => {
    // The first test left one state saved with llama.cpp's choice and one without flash attention.
    for (const setting of [undefined, "off"] as const) {
      const again = await open(setting);
      try {
        const start = startOf(await readEvents(again.generate(longRequest())));
        expect(start).toMatchObject({ cacheTier: "disk", cachedInputTokens: start.inputTokens - 1 });
      } finally {
        await again.close();
      }
    }
  }, 240_000);
});
