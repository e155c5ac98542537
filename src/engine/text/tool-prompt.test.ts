import { describe, expect, it } from "vitest";
import type { ToolSpec } from "../messages.js";
import { ToolCallParser } from "./tool-call-parser.js";
import { describeTools, formatToolCall, formatToolResult } from "./tool-prompt.js";

const tools: ToolSpec[] = [
  { name: "search", description: "Web search", inputSchema: { type: "object", properties: { q: { type: "string" } }, required: ["q"] } },
  { name: "noop", inputSchema: { type: "object" } },
];

describe("describeTools", () => {
  it("lists every tool as a JSON function spec inside <tools> and shows the call format", () => {
    const text = describeTools(tools);
    const listed = /<tools>\n([\s\S]*)\n<\/tools>/.exec(text)![1]!.split("\n").map((line) => JSON.parse(line) as unknown);
    expect(listed).toEqual([
      { type: "function", function: { name: "search", description: "Web search", parameters: tools[0]!.inputSchema } },
      { type: "function", function: { name: "noop", parameters: { type: "object" } } },
    ]);
    expect(text).toContain('<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>');
  });

  it("adds the instruction of the tool choice", () => {
    expect(describeTools(tools, { type: "auto" })).toBe(describeTools(tools));
    expect(describeTools(tools, { type: "required" })).toContain("must call at least one function");
    expect(describeTools(tools, { type: "tool", name: "search", parallel: false })).toMatch(/must call the function "search"[\s\S]*at most one function/);
    expect(describeTools(tools, { type: "none" })).toContain("Do not call any function");
  });
});

describe("formatToolCall and formatToolResult", () => {
  it("writes calls the parser reads back unchanged", () => {
    const input = { q: "a \"quoted\" <tool_call> word", n: [1, { deep: null }] };
    const parser = new ToolCallParser({ toolNames: ["search"] });
    const pieces = [...parser.push(formatToolCall({ type: "tool-call", id: "c1", name: "search", input })), ...parser.end()];
    expect(pieces.at(0)).toEqual({ kind: "call-start", name: "search" });
    expect(pieces.at(-1)).toEqual({ kind: "call-end", input });
    expect(pieces.filter((piece) => piece.kind === "text")).toEqual([]);
  });

  it("wraps results in <tool_response> and marks errors", () => {
    const content = [{ type: "text" as const, text: "line 1" }, { type: "text" as const, text: "line 2" }];
    expect(formatToolResult({ type: "tool-result", toolCallId: "c1", content })).toBe("<tool_response>\nline 1\nline 2\n</tool_response>");
    expect(formatToolResult({ type: "tool-result", toolCallId: "c1", content, isError: true })).toBe("<tool_response>\nError: line 1\nline 2\n</tool_response>");
  });
});
