import { describe, expect, it } from "vitest";
import { EngineError } from "../../errors/engine-error.js";
import type { ChatRequest, Message, ToolSpec } from "../messages.js";
import { QWEN_TOOLS_TEMPLATE, SMOLLM2_TEMPLATE, STRICT_TEMPLATE } from "./chat-templates.fixture.js";
import { renderChatPrompt } from "./render-prompt.js";

const weather: ToolSpec = {
  name: "get_weather",
  description: "Current weather for a city",
  inputSchema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
};

const user = (text: string): Message => ({ role: "user", parts: [{ type: "text", text }] });
const assistant = (text: string): Message => ({ role: "assistant", parts: [{ type: "text", text }] });

/** A tool round trip: user asks, assistant thinks and calls, the result comes back, the assistant answers. */
const toolConversation: Message[] = [
  user("Weather in Paris?"),
  {
    role: "assistant",
    parts: [
      { type: "reasoning", text: "I should call the tool", signature: "sig" },
      { type: "text", text: "Let me check." },
      { type: "tool-call", id: "call_1", name: "get_weather", input: { city: "Paris" } },
    ],
  },
  { role: "user", parts: [{ type: "tool-result", toolCallId: "call_1", content: [{ type: "text", text: "18C sunny" }] }] },
  assistant("It is 18C and sunny."),
  user("And tomorrow?"),
];

const request = (messages: Message[], extra: Partial<ChatRequest> = {}): ChatRequest => ({ model: "m", maxTokens: 16, messages, ...extra });

describe("renderChatPrompt with the SmolLM2 template", () => {
  it("renders ChatML turns with the system prompt and the generation prompt", () => {
    const prompt = renderChatPrompt(request([user("Hi")], { system: "Be brief." }), { source: SMOLLM2_TEMPLATE });
    expect(prompt).toBe("<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  });

  it("uses the template's default system prompt when there is none", () => {
    const prompt = renderChatPrompt(request([user("Hi")]), { source: SMOLLM2_TEMPLATE });
    expect(prompt.startsWith("<|im_start|>system\nYou are a helpful AI assistant named SmolLM")).toBe(true);
  });

  it("describes tools in the system prompt and renders calls and results as text, dropping reasoning", () => {
    const prompt = renderChatPrompt(request(toolConversation, { system: "S", tools: [weather] }), { source: SMOLLM2_TEMPLATE });
    expect(prompt.startsWith("<|im_start|>system\nS\n\n# Tools\n")).toBe(true);
    expect(prompt).toContain('<tools>\n{"type":"function","function":{"name":"get_weather"');
    expect(prompt).toContain('<|im_start|>assistant\nLet me check.\n<tool_call>\n{"name": "get_weather", "arguments": {"city":"Paris"}}\n</tool_call><|im_end|>\n');
    expect(prompt).toContain("<|im_start|>user\n<tool_response>\n18C sunny\n</tool_response><|im_end|>\n");
    expect(prompt).not.toContain("I should call the tool");
    expect(prompt.endsWith("<|im_start|>user\nAnd tomorrow?<|im_end|>\n<|im_start|>assistant\n")).toBe(true);
  });

  it("omits the tool description for tool choice none", () => {
    const prompt = renderChatPrompt(request([user("Hi")], { tools: [weather], toolChoice: { type: "none" } }), { source: SMOLLM2_TEMPLATE });
    expect(prompt).not.toContain("<tools>");
  });

  it("marks failed tool results", () => {
    const failed: Message = { role: "tool", parts: [{ type: "tool-result", toolCallId: "c", isError: true, content: [{ type: "text", text: "boom" }] }] };
    const prompt = renderChatPrompt(request([user("x"), toolConversation[1]!, failed]), { source: SMOLLM2_TEMPLATE });
    expect(prompt).toContain("<tool_response>\nError: boom\n</tool_response>");
  });

  it("ends with the text of a final assistant message (prefill), without an end-of-turn marker", () => {
    const prompt = renderChatPrompt(request([user("Hi"), assistant("Sure, here")]), { source: SMOLLM2_TEMPLATE });
    expect(prompt.endsWith("<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nSure, here")).toBe(true);
  });

  it("falls back to ChatML without a template", () => {
    expect(renderChatPrompt(request([user("Hi")]), {})).toBe("<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  });

  it("refuses images naming the field", () => {
    const withImage: Message = { role: "user", parts: [{ type: "text", text: "what?" }, { type: "image", mediaType: "image/png", source: { kind: "base64", data: "AA==" } }] };
    const error = catchError(() => renderChatPrompt(request([withImage]), { source: SMOLLM2_TEMPLATE }));
    expect(error).toBeInstanceOf(EngineError);
    expect(error).toMatchObject({ code: "invalid_request", details: { param: "messages.0.content.1" } });
    expect((error as Error).message).toContain("does not accept images");
  });
});

describe("prefix stability", () => {
  for (const [name, source] of [["SmolLM2", SMOLLM2_TEMPLATE], ["Qwen", QWEN_TOOLS_TEMPLATE], ["strict", STRICT_TEMPLATE]] as const) {
    it(`rendering a growing conversation only appends text (${name})`, () => {
      let previous = "";
      for (let n = 1; n <= toolConversation.length; n++) {
        const prompt = renderChatPrompt(request(toolConversation.slice(0, n), { system: "S", tools: [weather] }), { source, bosToken: "<s>" });
        expect(prompt.startsWith(previous)).toBe(true);
        previous = prompt;
      }
    });
  }

  it("is deterministic", () => {
    const render = () => renderChatPrompt(request(toolConversation, { tools: [weather] }), { source: QWEN_TOOLS_TEMPLATE });
    expect(render()).toBe(render());
  });
});

describe("templates that handle tools themselves", () => {
  it("passes tools as function specs and tool results as role tool", () => {
    const prompt = renderChatPrompt(request(toolConversation, { system: "S", tools: [weather] }), { source: QWEN_TOOLS_TEMPLATE });
    expect(prompt.startsWith("<|im_start|>system\nS\n\n# Tools\n")).toBe(true);
    expect(prompt).toContain('<tools>\n{"type": "function", "function": {"name": "get_weather"');
    expect(prompt.match(/<tools>\n/g)).toHaveLength(1);
    expect(prompt).toContain("<|im_start|>user\n<tool_response>\n18C sunny\n</tool_response><|im_end|>\n");
  });

  it("groups several results of one message into one user turn", () => {
    const results: Message = {
      role: "user",
      parts: [
        { type: "tool-result", toolCallId: "a", content: [{ type: "text", text: "one" }] },
        { type: "tool-result", toolCallId: "b", content: [{ type: "text", text: "two" }] },
      ],
    };
    const prompt = renderChatPrompt(request([user("q"), toolConversation[1]!, results]), { source: QWEN_TOOLS_TEMPLATE });
    expect(prompt).toContain("<|im_start|>user\n<tool_response>\none\n</tool_response>\n<tool_response>\ntwo\n</tool_response><|im_end|>\n");
  });
});

describe("templates that accept only a leading system message", () => {
  const strict = { source: STRICT_TEMPLATE, bosToken: "<s>" };
  const system = (text: string): Message => ({ role: "system", parts: [{ type: "text", text }] });

  it("folds mid-conversation system messages into the neighbouring user turn", () => {
    const prompt = renderChatPrompt(request([user("a"), assistant("b"), system("be terse"), user("c")], { system: "S" }), strict);
    expect(prompt).toBe("<s>[system]S[/][user]a[/][assistant]b[/][user]be terse\n\nc[/][assistant]");
  });

  it("joins a leading system message with request.system", () => {
    const prompt = renderChatPrompt(request([system("more"), user("a")], { system: "S" }), strict);
    expect(prompt).toBe("<s>[system]S\n\nmore[/][user]a[/][assistant]");
  });

  it("never puts system text between a tool call and its result", () => {
    const messages = [toolConversation[0]!, toolConversation[1]!, system("note"), toolConversation[2]!];
    const prompt = renderChatPrompt(request(messages), strict);
    expect(prompt).toContain("</tool_call>[/][user]<tool_response>\n18C sunny\n</tool_response>\n\nnote[/][assistant]");
  });

  it("merges consecutive turns of the same role", () => {
    const prompt = renderChatPrompt(request([user("a"), user("b"), assistant("c"), assistant("d"), user("e")]), strict);
    expect(prompt).toBe("<s>[user]a\n\nb[/][assistant]c\n\nd[/][user]e[/][assistant]");
  });

  it("reports a conversation the template rejects as invalid_request", () => {
    const bad = { source: "{{ raise_exception('nope') }}" };
    expect(catchError(() => renderChatPrompt(request([user("a")]), bad))).toMatchObject({ code: "invalid_request" });
  });
});

function catchError(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  throw new Error("expected an error");
}
