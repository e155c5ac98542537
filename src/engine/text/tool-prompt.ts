/**
 * The text convention for tools when the model's template has none of its own: tool specs as JSON inside
 * <tools></tools> in the system prompt, calls as <tool_call>{"name": …, "arguments": …}</tool_call> and results as
 * <tool_response>…</tool_response> — the Hermes format that Qwen and Hermes templates use natively, so models
 * trained on it recognise it. ToolCallParser reads it back; docs/tool-calls.md describes it for users.
 */
import type { ToolCallPart, ToolChoice, ToolResultPart, ToolSpec } from "../messages.js";

/** A tool as an OpenAI-style function spec, the shape tool-aware chat templates iterate over. */
export interface FunctionSpec {
  type: "function";
  function: { name: string; description?: string; parameters: Record<string, unknown> };
}

/** Converts a tool to the function-spec shape templates and the <tools> block use. */
export function toFunctionSpec(tool: ToolSpec): FunctionSpec {
  const description = tool.description === undefined ? {} : { description: tool.description };
  return { type: "function", function: { name: tool.name, ...description, parameters: tool.inputSchema } };
}

/** System-prompt text describing the tools and how to call them. */
export function describeTools(tools: ToolSpec[], choice?: ToolChoice): string {
  const specs = tools.map((tool) => JSON.stringify(toFunctionSpec(tool))).join("\n");
  return [
    "# Tools",
    "",
    "You may call one or more functions to assist with the user query.",
    "",
    "You are provided with function signatures within <tools></tools> XML tags:",
    `<tools>\n${specs}\n</tools>`,
    "",
    "For each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:",
    '<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>',
    ...describeChoice(choice),
  ].join("\n");
}

/** The extra instruction a tool choice adds, if any. */
function describeChoice(choice: ToolChoice | undefined): string[] {
  const rules: string[] = [];
  if (choice?.type === "none") rules.push("Do not call any function in this reply; answer in text.");
  if (choice?.type === "required") rules.push("You must call at least one function in this reply.");
  if (choice?.type === "tool") rules.push(`You must call the function "${choice.name}" in this reply.`);
  if (choice && choice.type !== "none" && choice.parallel === false) rules.push("Call at most one function per reply.");
  return rules.length > 0 ? ["", ...rules] : [];
}

/** A past tool call as the model would have written it. */
export function formatToolCall(call: ToolCallPart): string {
  return `<tool_call>\n{"name": ${JSON.stringify(call.name)}, "arguments": ${JSON.stringify(call.input ?? {})}}\n</tool_call>`;
}

/** A tool result as the model expects to read it back. */
export function formatToolResult(result: ToolResultPart): string {
  return `<tool_response>\n${formatToolResultBody(result)}\n</tool_response>`;
}

/**
 * The inside of a tool response: its text parts, marked when the tool failed. Templates that wrap tool messages
 * in <tool_response> themselves get only this. Images are refused before this point.
 */
export function formatToolResultBody(result: ToolResultPart): string {
  const text = result.content.map((part) => (part.type === "text" ? part.text : "")).join("\n");
  return result.isError ? `Error: ${text}` : text;
}
