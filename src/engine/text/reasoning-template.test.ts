import { describe, expect, it } from "vitest";
import type { ChatRequest } from "../messages.js";
import { opensReasoning, templateReasons, thinkingSwitch } from "./reasoning-template.js";
import { prepareChatPrompt, renderPrepared } from "./render-prompt.js";

/** The assistant-turn and generation-prompt parts of Qwen3's chat template, as its GGUF ships them. */
const QWEN3 =
  "{%- for message in messages %}{%- if message.role == 'assistant' %}{%- set content = message.content %}" +
  "{%- if '</think>' in content %}{%- set content = content.split('</think>')[-1].lstrip('\\n') %}{%- endif %}" +
  "{{- '<|im_start|>assistant\\n' + content + '<|im_end|>\\n' }}{%- else %}" +
  "{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}{%- endif %}{%- endfor %}" +
  "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}" +
  "{%- if enable_thinking is defined and enable_thinking is false %}{{- '<think>\\n\\n</think>\\n\\n' }}{%- endif %}{%- endif %}";

/** QwQ's generation prompt opens the block itself. */
const QWQ =
  "{%- for message in messages %}{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}{%- endfor %}" +
  "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n<think>\\n' }}{%- endif %}{# drops text up to </think> #}";

/** The part of DeepSeek-R1-Distill-Qwen's template that handles past reasoning (read from its GGUF). */
const DEEPSEEK_R1 = "{% set content = message['content'] %}{% if '</think>' in content %}{% set content = content.split('</think>')[-1] %}{% endif %}";

const CHATML_CODER = "{%- for message in messages %}{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}{%- endfor %}";

const ask = (extra: Partial<ChatRequest> = {}): ChatRequest => ({ model: "m", messages: [{ role: "user", parts: [{ type: "text", text: "Hi" }] }], maxTokens: 8, ...extra });

/** Renders like the planner does and says whether generation would start inside a think block. */
function startsInside(source: string, request: ChatRequest): { prompt: string; inside: boolean } {
  const prepared = prepareChatPrompt(request, { source });
  const prompt = renderPrepared(prepared);
  return { prompt, inside: opensReasoning(prompt.slice(0, prompt.length - prepared.prefill.length), prepared.prefill) };
}

describe("reasoning from the chat template", () => {
  it("recognises templates that handle think blocks, and no others", () => {
    expect([QWEN3, QWQ, DEEPSEEK_R1].map(templateReasons)).toEqual([true, true, true]);
    expect([CHATML_CODER, undefined].map(templateReasons)).toEqual([false, false]);
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

  it("starts inside the block when the generation prompt opens it", () => {
    expect(startsInside(QWQ, ask()).inside).toBe(true);
  });

  it("follows a prefill of the assistant turn that opens or closes the block", () => {
    const prefill = (text: string) => ask({ messages: [...ask().messages, { role: "assistant", parts: [{ type: "text", text }] }] });
    expect(startsInside(QWEN3, prefill("<think>\nFirst,")).inside).toBe(true);
    expect(startsInside(QWEN3, prefill("<think>done</think>\n")).inside).toBe(false);
    expect(startsInside(QWQ, prefill("Partly thought, </think> now the answer")).inside).toBe(false);
    expect(startsInside(QWQ, prefill("still thinking")).inside).toBe(true);
  });
});
