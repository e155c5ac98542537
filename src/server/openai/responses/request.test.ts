import { describe, expect, it } from "vitest";
import { EngineError } from "../../../engine/index.js";
import { fromResponsesRequest } from "./request.js";

describe("fromResponsesRequest", () => {
  it("translates a Codex-style request: instructions + developer → system, items → ordered turns", () => {
    const { request, stream } = fromResponsesRequest({
      model: "m",
      instructions: "You are a coding agent.",
      input: [
        { type: "message", role: "developer", content: [{ type: "input_text", text: "Sandbox: read-only." }] },
        { type: "message", role: "user", content: [{ type: "input_text", text: "list files" }] },
        { type: "reasoning", summary: [{ type: "summary_text", text: "Use ls." }], encrypted_content: null },
        { type: "function_call", name: "shell", arguments: "{\"command\":[\"ls\"]}", call_id: "call_1" },
        { type: "function_call_output", call_id: "call_1", output: "a.txt\n" },
        { type: "message", role: "assistant", content: [{ type: "output_text", text: "One file." }] },
        { type: "web_search_call", id: "ws_1" },
      ],
      tools: [{ type: "function", name: "shell", strict: false, parameters: { type: "object" } }, { type: "local_shell" }, { type: "custom", name: "apply_patch" }],
      tool_choice: "auto",
      parallel_tool_calls: false,
      max_output_tokens: 32,
      reasoning: { effort: "medium" }, store: false, stream: true, include: ["reasoning.encrypted_content"],
    });
    expect(stream).toBe(true);
    expect(request.system).toBe("You are a coding agent.\n\nSandbox: read-only.");
    expect(request.messages).toEqual([
      { role: "user", parts: [{ type: "text", text: "list files" }] },
      { role: "assistant", parts: [{ type: "reasoning", text: "Use ls." }, { type: "tool-call", id: "call_1", name: "shell", input: { command: ["ls"] } }] },
      { role: "tool", parts: [{ type: "tool-result", toolCallId: "call_1", content: [{ type: "text", text: "a.txt\n" }] }] },
      { role: "assistant", parts: [{ type: "text", text: "One file." }] },
    ]);
    expect(request.tools).toEqual([{ name: "shell", inputSchema: { type: "object" } }]);
    expect(request.toolChoice).toEqual({ type: "auto", parallel: false });
    expect(request.maxTokens).toBe(32);
    expect(request.thinking).toBe(true);
  });

  it("maps reasoning.effort to the thinking switch: none off, any other effort on, absent the model's default", () => {
    const call = (reasoning: unknown) => fromResponsesRequest({ model: "m", input: "Hi", reasoning }).request.thinking;
    expect([call({ effort: "none" }), call({ effort: "minimal" }), call({ effort: "high" }), call({}), call(undefined)]).toEqual([false, true, true, undefined, undefined]);
    expect(() => call({ effort: "extreme" })).toThrow("Invalid 'reasoning.effort': Expected one of none, minimal, low, medium, high, xhigh, max");
  });

  it("accepts an output that answers no call, as Codex sends for its goal (a name, no call_id)", () => {
    const { request } = fromResponsesRequest({
      model: "m",
      input: [
        { type: "function_call", name: "create_goal", arguments: "{}", call_id: "call_1" },
        { type: "function_call_output", call_id: "call_1", output: "{\"goal\":{}}" },
        { type: "function_call_output", name: "goal_objective", namespace: "agent", output: "Create hello.py" },
      ],
    });
    expect(request.messages.at(-1)).toEqual({ role: "tool", parts: [
      { type: "tool-result", toolCallId: "call_1", content: [{ type: "text", text: "{\"goal\":{}}" }] },
      { type: "tool-result", toolCallId: "goal_objective", content: [{ type: "text", text: "Create hello.py" }] },
    ] });
  });

  it("accepts a string input and a json_schema text format", () => {
    const schema = { type: "object", properties: {} };
    const { request } = fromResponsesRequest({ model: "m", input: "hi", text: { format: { type: "json_schema", name: "x", schema, strict: true } } });
    expect(request.messages).toEqual([{ role: "user", parts: [{ type: "text", text: "hi" }] }]);
    expect(request.responseFormat).toEqual({ type: "json-schema", name: "x", schema });
  });

  it("maps tool_choice like chat does: a named function, required, and a choice of a tool kiln does not serve as auto", () => {
    const tools = [{ type: "function", name: "shell", parameters: { type: "object" } }, { type: "web_search" }];
    const choice = (tool_choice: unknown) => fromResponsesRequest({ model: "m", input: "hi", tools, tool_choice }).request.toolChoice;
    expect(choice({ type: "function", name: "shell" })).toEqual({ type: "tool", name: "shell" });
    expect(choice("required")).toEqual({ type: "required" });
    expect(choice({ type: "web_search" })).toEqual({ type: "auto" });
    let error: unknown;
    try { choice({ type: "function", name: "nope" }); } catch (caught) { error = caught; }
    expect(error).toMatchObject({ code: "invalid_request", details: { param: "tool_choice" } });
  });

  it("names the item of invalid function_call arguments", () => {
    let error: unknown;
    try { fromResponsesRequest({ model: "m", input: [{ type: "function_call", name: "f", arguments: "{", call_id: "c" }] }); } catch (caught) { error = caught; }
    expect((error as EngineError).details.param).toBe("input.0.arguments");
  });
});
