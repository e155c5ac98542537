/**
 * GBNF grammars (llama.cpp syntax, accepted by node-llama-cpp's `llama.createGrammar({ grammar })`) that force
 * structured output: JSON for a schema or response format, and a tool call when the tool choice demands one.
 */
import { EngineError } from "../../errors/engine-error.js";
import type { ResponseFormat, ToolChoice, ToolSpec } from "../messages.js";
import { GbnfBuilder, toGbnfLiteral } from "./gbnf-builder.js";

/** A full grammar whose `root` matches JSON valid against `schema` (the supported subset). */
export function jsonSchemaToGbnf(schema: Record<string, unknown>): string {
  const builder = new GbnfBuilder();
  return builder.toGrammar(builder.addSchema(schema, "root-value"));
}

/** Runs `build`, prefixing a schema error with where the schema came from (`tools[get_weather].input_schema`). */
function inSchema<T>(where: string, param: string, build: () => T): T {
  try {
    return build();
  } catch (error) {
    if (!(error instanceof EngineError) || error.code !== "invalid_request") throw error;
    throw new EngineError("invalid_request", `${where}: ${error.message}`, { ...error.details, param });
  }
}

/**
 * For `required` (any offered tool) or `tool` (that one): exactly one call in the format of tool-prompt.ts,
 * `<tool_call>\n{"name": "<name>", "arguments": <object valid for its input schema>}\n</tool_call>`.
 * `auto` and `none` leave the model free: undefined.
 */
export function toolCallGrammar(tools: ToolSpec[], choice: ToolChoice): string | undefined {
  if (choice.type === "auto" || choice.type === "none") return undefined;
  const allowed = choice.type === "tool" ? tools.filter((tool) => tool.name === choice.name) : tools;
  if (allowed.length === 0) {
    const message = choice.type === "tool" ? `tool_choice names "${choice.name}", which is not among the tools` : "tool_choice requires a tool call but no tools were given";
    throw new EngineError("invalid_request", message, { param: "tool_choice" });
  }
  const builder = new GbnfBuilder();
  const calls = allowed.map((tool) => {
    const args = inSchema(`tools[${tool.name}].input_schema`, "tools", () => builder.addSchema(tool.inputSchema, `${tool.name}-arguments`));
    const head = toGbnfLiteral(`<tool_call>\n{"name": ${JSON.stringify(tool.name)}, "arguments": `);
    return builder.addRule(`${tool.name}-call`, `${head} ${args === "value" ? "object" : args} ${toGbnfLiteral("}\n</tool_call>")}`);
  });
  return builder.toGrammar(calls.join(" | "));
}

/** `json`: any JSON object; `json-schema`: JSON valid against the schema; `text`: no grammar. */
export function responseFormatGrammar(format: ResponseFormat): string | undefined {
  if (format.type === "json") return jsonSchemaToGbnf({ type: "object" });
  if (format.type === "json-schema") return inSchema("response_format.schema", "response_format", () => jsonSchemaToGbnf(format.schema));
  return undefined;
}
