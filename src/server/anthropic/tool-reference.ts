/**
 * Claude Code's tool search answers `select:X` with `tool_result.content = [{type:"tool_reference",tool_name}]`.
 * The real API expands that into the tool's definition; kiln renders the same text the ToolSearch tool promises:
 * `<functions><function>{"description","name","parameters"}</function></functions>`.
 */
import type { ToolParam } from "./schema.js";

/** The textual definition of a referenced tool (or a note when the request does not carry it). */
export function renderToolReference(name: string, tools: ToolParam[]): string {
  const tool = tools.find((candidate) => candidate.name === name);
  if (!tool) return `Tool "${name}" is not available.`;
  const definition = { description: tool.description ?? "", name: tool.name, parameters: tool.input_schema ?? {} };
  return `<functions><function>${JSON.stringify(definition)}</function></functions>`;
}
