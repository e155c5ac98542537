/**
 * A short unrelated request must not evict another conversation's cached prompt: coding agents send side requests
 * (titles, summaries, a second tool's prompt) that share only the chat template's opening tokens with the main
 * conversation, and re-evaluating that conversation's long prompt costs minutes on a CPU. Real default model.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { createEngine, type Engine } from "../../src/engine/index.js";
import { realModelPath, testThreads } from "../helpers/real-model.js";
import { readEvents, startOf, userRequest } from "../helpers/stream-events.js";

let engine: Engine;

beforeAll(async () => {
  engine = await createEngine({ models: [{ id: "smollm2-135m", path: realModelPath(), aliases: ["default"] }], parallel: 2, ctxSize: 2048, threads: testThreads() });
});

afterAll(async () => {
  await engine?.close();
});

it("keeps a long cached prompt when an unrelated short request arrives, so the conversation's next turn reuses it", async () => {
  const text = Array.from({ length: 60 }, (_, i) => `Rule ${i}: keep the kiln at ${900 + i} degrees.`).join(" ");
  const conversation = userRequest("default", text, { maxTokens: 1 });
  const first = startOf(await readEvents(engine.generate(conversation)));
  // The side request shares the template's opening (system prompt) with the conversation and nothing else.
  const side = startOf(await readEvents(engine.generate(userRequest("default", "Title?", { maxTokens: 1 }))));
  expect(side.cachedInputTokens).toBeLessThan(64);
  const again = startOf(await readEvents(engine.generate(conversation)));
  expect(first.inputTokens).toBeGreaterThan(400);
  expect(again.cachedInputTokens).toBe(first.inputTokens - 1);
});
