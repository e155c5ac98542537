import { describe, expect, it } from "vitest";
import type { ChatRequest } from "../messages.js";
import { opensReasoning, templateReasons, thinkingSwitch } from "./reasoning-template.js";
import { prepareChatPrompt, renderPrepared } from "./render-prompt.js";
import { QWEN_TOOLS_TEMPLATE, SMOLLM2_TEMPLATE } from "./chat-templates.fixture.js";
import { DEEPSEEK_R1_TEMPLATE, QWEN3_TEMPLATE as QWEN3, QWQ_TEMPLATE as QWQ } from "./reasoning-templates.fixture.js";

const ask = (extra: Partial<ChatRequest> = {}): ChatRequest => ({ model: "m", messages: [{ role: "user", parts: [{ type: "text", text: "Hi" }] }], maxTokens: 8, ...extra });

/** Renders like the planner does and says whether generation would start inside a think block. */
function startsInside(source: string, request: ChatRequest): { prompt: string; inside: boolean } {
  const prepared = prepareChatPrompt(request, { source });
  const prompt = renderPrepared(prepared);
  return { prompt, inside: opensReasoning(prompt.slice(0, prompt.length - prepared.prefill.length), prepared.prefill) };
}

describe("reasoning from the chat template", () => {
  it("recognises templates that handle think blocks, and no others", () => {
    expect([QWEN3, QWQ, DEEPSEEK_R1_TEMPLATE].map(templateReasons)).toEqual([true, true, true]);
    expect([SMOLLM2_TEMPLATE, QWEN_TOOLS_TEMPLATE, undefined].map(templateReasons)).toEqual([false, false, false]);
  });

  it("finds Qwen3's enable_thinking switch and passes the request's choice to it", () => {
    expect(thinkingSwitch(QWEN3)).toBe("enable_thinking");
    expect(thinkingSwitch(QWQ)).toBeUndefined();
    const off = startsInside(QWEN3, ask({ thinking: false }));
    expect(off.prompt.endsWith("<|im_start|>assistant\n<think>\n\n</think>\n\n")).toBe(true);
    expect(off.inside).toBe(false);
    for (const thinking of [true, undefined]) {
      const on = startsInside(QWEN3, ask({ thinking }));
      expect(on.prompt.endsWith("<|im_start|>assistant\n")).toBe(true);
      expect(on.inside).toBe(false);
    }
  });

  it("starts inside the block when the generation prompt opens it, and outside when it does not", () => {
    expect(startsInside(QWQ, ask()).inside).toBe(true);
    const r1 = startsInside(DEEPSEEK_R1_TEMPLATE, ask());
    expect(r1.prompt.endsWith("<｜User｜>Hi<｜Assistant｜>")).toBe(true);
    expect(r1.inside).toBe(false);
  });

  it("follows a prefill of the assistant turn that opens or closes the block", () => {
    const prefill = (text: string) => ask({ messages: [...ask().messages, { role: "assistant", parts: [{ type: "text", text }] }] });
    expect(startsInside(QWEN3, prefill("<think>\nFirst,")).inside).toBe(true);
    expect(startsInside(QWEN3, prefill("<think>done</think>\n")).inside).toBe(false);
    expect(startsInside(QWQ, prefill("Partly thought, </think> now the answer")).inside).toBe(false);
    expect(startsInside(QWQ, prefill("still thinking")).inside).toBe(true);
  });
});
