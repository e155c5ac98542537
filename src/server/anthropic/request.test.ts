import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { EngineError } from "../../engine/index.js";
import { fromMessagesRequest } from "./request.js";
import { checkAnthropicVersion, MessagesRequestSchema, parseRequest } from "./schema.js";
import { signThinking } from "./thinking-signature.js";

// The signing secret of this file's runs lives in a home of its own.
const home = (process.env.KILN_HOME = mkdtempSync(join(tmpdir(), "kiln-thinking-")));
afterAll(() => rmSync(home, { recursive: true, force: true }));

const translate = (body: unknown) => fromMessagesRequest(parseRequest(MessagesRequestSchema, body));
const errorOf = (fn: () => unknown): EngineError => {
  try {
    fn();
  } catch (error) {
    return error as EngineError;
  }
  throw new Error("expected an error");
};

/**
 * A request shaped like Claude Code 2.1.330's (https://docs.anthropic.com/en/api/messages), with the fields other
 * clients add.
 */
const claudeCodeBody = {
  model: "m",
  max_tokens: 32000,
  stream: true,
  system: [
    { type: "text", text: "x-anthropic-billing-header: cc_version=2.1.330.1; cc_entrypoint=sdk-cli;" },
    { type: "text", text: "You are a Claude agent.", cache_control: { type: "ephemeral", ttl: "1h", scope: "global" } },
  ],
  messages: [
    { role: "user", content: [{ type: "text", text: "<system-reminder>date</system-reminder>" }, { type: "text", text: "list files", cache_control: { type: "ephemeral" } }] },
    { role: "system", content: [{ type: "text", text: "Agent types: none" }] },
    { role: "assistant", content: [
      { type: "thinking", thinking: "I should search.", signature: signThinking("I should search.") },
      { type: "redacted_thinking", data: "xyz" },
      { type: "tool_use", id: "toolu_1", name: "ToolSearch", input: { query: "select:Bash" } },
    ] },
    { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_1", content: [{ type: "tool_reference", tool_name: "Bash" }] }] },
    { role: "user", content: [{ type: "document", source: { type: "text", media_type: "text/plain", data: "notes" } }] },
  ],
  tools: [
    { name: "ToolSearch", description: "Find tools", input_schema: { $schema: "https://json-schema.org/draft/2020-12/schema", type: "object", properties: { query: { type: "string" } }, propertyNames: { pattern: "^q" }, additionalProperties: false } },
    { name: "Bash", description: "Run a command", input_schema: { type: "object", properties: { command: { type: "string" } } }, defer_loading: true, strict: true },
    { name: "NotebookEdit", input_schema: { type: "object" }, defer_loading: true, eager_input_streaming: true, input_examples: [{}] },
    { type: "web_search_20250305", name: "web_search", max_uses: 8 },
  ],
  metadata: { user_id: JSON.stringify({ device_id: "d", session_id: "s" }) },
  thinking: { type: "adaptive", display: "omitted" },
  context_management: { edits: [{ type: "clear_thinking_20251015", keep: "all" }] },
  output_config: { effort: "high" },
  cache_control: { type: "ephemeral" },
  speed: "fast", diagnostics: {}, container: "c", mcp_servers: [], inference_geo: "us", service_tier: "auto", foo: 1,
};

describe("fromMessagesRequest", () => {
  it("accepts a Claude Code request and keeps its meaning", () => {
    const request = translate(claudeCodeBody);
    expect(request.system).toBe("You are a Claude agent.");
    expect(request.maxTokens).toBe(32000);
    expect(request.messages.map((m) => m.role)).toEqual(["user", "system", "assistant", "user"]);
    expect(request.messages[2]!.parts.map((p) => p.type)).toEqual(["reasoning", "tool-call"]);
    const result = request.messages[3]!.parts[0];
    expect(result).toMatchObject({ type: "tool-result", toolCallId: "toolu_1" });
    expect(JSON.stringify(result)).toContain("<functions><function>");
    expect(request.messages[3]!.parts[1]).toEqual({ type: "text", text: "notes" });
    // Deferred tools are offered once referenced; server tools never are.
    expect(request.tools?.map((t) => t.name)).toEqual(["ToolSearch", "Bash"]);
  });

  it("merges same-role turns, keeps a final assistant turn as prefill and maps sampling and stops", () => {
    const request = translate({
      model: "m", max_tokens: 5, temperature: 0.5, top_p: 0.9, top_k: 40, stop_sequences: ["END"],
      messages: [{ role: "user", content: "a" }, { role: "user", content: "b" }, { role: "assistant", content: "The answer is" }],
    });
    expect(request.messages).toEqual([
      { role: "user", parts: [{ type: "text", text: "a" }, { type: "text", text: "b" }] },
      { role: "assistant", parts: [{ type: "text", text: "The answer is" }] },
    ]);
    expect(request.sampling).toEqual({ temperature: 0.5, topP: 0.9, topK: 40 });
    expect(request.stop).toEqual(["END"]);
  });

  it("maps every tool_choice with disable_parallel_tool_use", () => {
    const tools = [{ name: "t", input_schema: { type: "object" } }];
    const base = { model: "m", max_tokens: 1, messages: [{ role: "user", content: "x" }], tools };
    expect(translate({ ...base, tool_choice: { type: "auto", disable_parallel_tool_use: true } }).toolChoice).toEqual({ type: "auto", parallel: false });
    expect(translate({ ...base, tool_choice: { type: "any" } }).toolChoice).toEqual({ type: "required" });
    expect(translate({ ...base, tool_choice: { type: "tool", name: "t", disable_parallel_tool_use: false } }).toolChoice).toEqual({ type: "tool", name: "t", parallel: true });
    expect(translate({ ...base, tool_choice: { type: "none" } }).toolChoice).toEqual({ type: "none" });
    expect(translate({ ...base, tools: [] }).tools).toBeUndefined();
  });

  it("maps thinking to the template's switch: enabled on, disabled off, adaptive the model's default", () => {
    const base = { model: "m", max_tokens: 2048, messages: [{ role: "user", content: "x" }] };
    expect(translate({ ...base, thinking: { type: "enabled", budget_tokens: 1024 } })).toMatchObject({ thinking: true, thinkingBudget: 1024 });
    expect(translate({ ...base, thinking: { type: "disabled" } }).thinking).toBe(false);
    expect(translate({ ...base, thinking: { type: "adaptive" } }).thinking).toBeUndefined();
    expect(translate(base).thinking).toBeUndefined();
  });

  it("takes back a thinking block it signed, and one without a signature", () => {
    const turn = (block: Record<string, unknown>) => translate({
      model: "m", max_tokens: 5,
      messages: [{ role: "user", content: "a" }, { role: "assistant", content: [block, { type: "text", text: "b" }] }, { role: "user", content: "c" }],
    }).messages[1]!.parts[0];
    const signature = signThinking("Five is odd.");
    expect(turn({ type: "thinking", thinking: "Five is odd.", signature })).toEqual({ type: "reasoning", text: "Five is odd.", signature });
    expect(turn({ type: "thinking", thinking: "Five is odd." })).toEqual({ type: "reasoning", text: "Five is odd." });
  });

  it("refuses a thinking block whose text or signature was changed", () => {
    const body = (thinking: string, signature: string) => ({
      model: "m", max_tokens: 5,
      messages: [{ role: "user", content: "a" }, { role: "assistant", content: [{ type: "thinking", thinking, signature }] }, { role: "user", content: "c" }],
    });
    const signature = signThinking("Five is odd.");
    for (const [thinking, sig] of [["Five is even.", signature], ["Five is odd.", `${signature.slice(0, -4)}AAA=`], ["Five is odd.", "kiln1.opaque"]]) {
      const error = errorOf(() => translate(body(thinking!, sig!)));
      expect(error).toBeInstanceOf(EngineError);
      expect(error).toMatchObject({ code: "invalid_request", details: { param: "messages.1.content.0.signature" } });
      expect(error.message).toBe("messages.1.content.0.signature: the signature does not match this thinking block (the block or its signature was changed, or another kiln install wrote it)");
    }
  });

  it("takes a block signed by another server as unsigned history: it cannot be checked here", () => {
    const translated = translate({
      model: "m", max_tokens: 5,
      messages: [{ role: "user", content: "a" }, { role: "assistant", content: [{ type: "thinking", thinking: "Five is odd.", signature: "EqQBCkYIBRgCKkD" }] }, { role: "user", content: "c" }],
    });
    expect(translated.messages[1]!.parts[0]).toMatchObject({ type: "reasoning", text: "Five is odd." });
  });

  it("turns structured-output requests into a JSON-schema response format", () => {
    const schema = { type: "object", properties: { title: { type: "string" } } };
    const request = translate({ model: "m", max_tokens: 9, messages: [{ role: "user", content: "t" }], output_config: { format: { type: "json_schema", schema } } });
    expect(request.responseFormat).toEqual({ type: "json-schema", schema });
  });
});

describe("validation messages", () => {
  const base = { model: "m", max_tokens: 1, messages: [{ role: "user", content: "x" }] };
  it.each([
    [{ ...base, max_tokens: undefined }, "max_tokens: Field required"],
    [{ ...base, max_tokens: 0 }, "max_tokens: must be at least 1"],
    [{ ...base, max_tokens: 1.5 }, "max_tokens: must be an integer"],
    [{ ...base, messages: [] }, "messages: must contain at least one message"],
    [{ ...base, messages: [{ role: "bot", content: "x" }] }, 'messages.0.role: must be "user", "assistant" or "system"'],
    [{ ...base, messages: [{ role: "user" }] }, "messages.0.content: Field required"],
    [{ ...base, temperature: 1.5 }, "temperature: must be a number between 0 and 1"],
    [{ ...base, top_k: -1 }, "top_k: must be at least 0"],
    [{ ...base, stop_sequences: "x" }, "stop_sequences: must be an array of strings"],
    [{ ...base, system: 3 }, "system: must be a string or an array of text blocks"],
    [{ ...base, tools: [{ name: "t" }] }, "tools.0.input_schema: Field required"],
    [{ ...base, tool_choice: { type: "maybe" } }, 'tool_choice.type: must be an object with type "auto", "any", "tool" or "none"'],
    [{ ...base, tool_choice: { type: "tool", name: "t" } }, 'tool_choice: "tool" requires at least one tool in tools'],
    [{ ...base, thinking: { type: "sometimes" } }, 'thinking.type: must be an object with type "enabled", "disabled" or "adaptive"'],
    [{ ...base, max_tokens: 4096, thinking: { type: "enabled" } }, "thinking.budget_tokens: Field required"],
    [{ ...base, max_tokens: 4096, thinking: { type: "enabled", budget_tokens: 512 } }, "thinking.budget_tokens: must be at least 1024"],
    [{ ...base, max_tokens: 2048, thinking: { type: "enabled", budget_tokens: 2048 } }, "thinking.budget_tokens: must be less than max_tokens"],
    [{ ...base, messages: [{ role: "user", content: [{ type: "document", source: { type: "base64", media_type: "application/pdf", data: "" } }] }] }, 'messages.0.content.0.source: document source type "base64" is not supported (only plain-text documents are)'],
    [[], "body: must be a JSON object"],
  ])("%j → %s", (body, message) => {
    expect(errorOf(() => translate(body)).message).toBe(message);
  });

  it("accepts dated anthropic-version values and refuses others", () => {
    expect(() => checkAnthropicVersion("2023-06-01")).not.toThrow();
    expect(() => checkAnthropicVersion(null)).not.toThrow();
    expect(errorOf(() => checkAnthropicVersion("v1")).message).toBe('anthropic-version: "v1" is not a valid version');
  });
});
