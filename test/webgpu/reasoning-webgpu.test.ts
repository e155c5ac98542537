/**
 * Reasoning on the WebGPU backend: the same real token stream as on llama.cpp (the coder model marked as a
 * reasoning model, shown the `<think>` format by one example turn) is split into a reasoning block and the answer,
 * through the output path both local backends share.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createEngine, type ChatRequest, type Engine, type GenerationEvent } from "../../src/engine/index.js";
import { coderModelPath } from "../helpers/real-model.js";
import { REASONING_SYSTEM, REASONING_TURNS } from "../helpers/reasoning-prompt.js";
import { finishOf, readEvents, textOf } from "../helpers/stream-events.js";
import { webGpuAvailable } from "../helpers/webgpu.js";

const path = coderModelPath();
const available = path !== undefined && (await webGpuAvailable());
let engine: Engine;

beforeAll(async () => {
  if (!available) return;
  engine = await createEngine({ models: [{ id: "coder-thinking", path: path!, backend: "webgpu", reasoning: true }], parallel: 1, ctxSize: 512 });
}, 300_000);
afterAll(async () => engine?.close());

const reasoningOf = (events: GenerationEvent[]) => events.map((event) => (event.type === "reasoning-delta" ? event.text : "")).join("");

describe.skipIf(!available)("reasoning on the WebGPU backend", { timeout: 600_000 }, () => {
  it("splits the model's think block from its answer, and closes it at a budget", async () => {
    const request: ChatRequest = {
      model: "coder-thinking",
      system: REASONING_SYSTEM,
      messages: REASONING_TURNS.map(({ role, content }) => ({ role, parts: [{ type: "text", text: content }] })),
      maxTokens: 80,
      sampling: { temperature: 0 },
    };
    const events = await readEvents(engine.generate(request));
    expect(events.filter((event) => event.type.endsWith("-start")).map((event) => event.type)).toEqual(["reasoning-start", "text-start"]);
    expect(reasoningOf(events)).toMatch(/17/);
    expect(textOf(events)).toContain("42");
    expect(`${reasoningOf(events)}${textOf(events)}`).not.toMatch(/<\/?think>/);
    expect(engine.findModel("coder-thinking")?.details).toMatchObject({ reasoning: true, architecture: "qwen2" });
    const { usage } = finishOf(events);
    expect(usage.reasoningTokens).toBeGreaterThan(5);
    expect(usage.reasoningTokens).toBeLessThan(usage.outputTokens);

    // With a budget of four tokens the block is closed there, the same thought cut short, and the answer follows.
    const budgeted = await readEvents(engine.generate({ ...request, thinkingBudget: 4 }));
    expect(reasoningOf(budgeted).length).toBeGreaterThan(0);
    expect(reasoningOf(events).startsWith(reasoningOf(budgeted))).toBe(true);
    expect(reasoningOf(budgeted).length).toBeLessThan(reasoningOf(events).length);
    expect(textOf(budgeted).trim().length).toBeGreaterThan(0);
  });
});
