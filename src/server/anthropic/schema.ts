/**
 * Valibot schema of the Messages request. Lenient by design: unknown fields are ignored everywhere (Claude
 * Code sends many that evolve: context_management, output_config, speed…); every field kiln uses is checked,
 * and a violation becomes `<path>: <rule>` (e.g. `max_tokens: Field required`), the real API's convention.
 * `null` counts as absent for optional fields.
 * @see https://docs.claude.com/en/api/messages
 */
import * as v from "valibot";
import { EngineError } from "../../engine/index.js";

const text = (rule = "must be a string") => v.string(rule);
const flag = () => v.nullish(v.boolean("must be a boolean"));

/** String content is shorthand for one text block; normalising first keeps error paths pointing at blocks. */
const asBlocks = (value: unknown) => (typeof value === "string" ? [{ type: "text", text: value }] : value);

const TextBlock = v.looseObject({ type: v.literal("text"), text: text() });
const Source = v.looseObject({ type: text() }, "must be an object");
const ToolReference = v.looseObject({ type: v.literal("tool_reference"), tool_name: text() });
/** Block types the API defines that kiln does not render (server-tool echoes, search results): accepted, skipped. */
const ECHO_BLOCKS = [
  "search_result", "server_tool_use", "web_search_tool_result", "web_fetch_tool_result", "code_execution_tool_result",
  "bash_code_execution_tool_result", "text_editor_code_execution_tool_result", "tool_search_tool_result",
  "container_upload", "mcp_tool_use", "mcp_tool_result",
] as const;
const OtherBlock = v.looseObject({ type: v.picklist(ECHO_BLOCKS) });
/** A type the API does not define is refused, as the vendor does, rather than silently dropped. */
const blockMessage = (issue: v.BaseIssue<unknown>) => issue.path?.at(-1)?.key === "type" && issue.received.startsWith('"')
  ? `unknown content block type ${issue.received}` : "must be a content block object";

const ResultBlock = v.variant("type", [
  TextBlock,
  v.looseObject({ type: v.literal("image"), source: Source }),
  v.looseObject({ type: v.literal("document"), source: Source }),
  ToolReference,
  OtherBlock,
], blockMessage);

const ContentBlock = v.variant("type", [
  TextBlock,
  v.looseObject({ type: v.literal("image"), source: Source }),
  v.looseObject({ type: v.literal("document"), source: Source }),
  v.looseObject({ type: v.literal("tool_use"), id: text(), name: text(), input: v.nullish(v.unknown()) }),
  v.looseObject({
    type: v.literal("tool_result"),
    tool_use_id: text(),
    content: v.nullish(v.pipe(v.unknown(), v.transform(asBlocks), v.array(ResultBlock, "must be a string or an array of content blocks"))),
    is_error: flag(),
  }),
  v.looseObject({ type: v.literal("thinking"), thinking: v.nullish(text()), signature: v.nullish(text()) }),
  v.looseObject({ type: v.literal("redacted_thinking") }),
  ToolReference,
  OtherBlock,
], blockMessage);

const Blocks = v.pipe(v.unknown(), v.transform(asBlocks), v.array(ContentBlock, "must be a string or an array of content blocks"));

const Message = v.looseObject({
  role: v.picklist(["user", "assistant", "system"], 'must be "user", "assistant" or "system"'),
  content: Blocks,
}, "must be an object");

/** A custom tool needs `input_schema`; Anthropic-defined and server tools (typed, schema-less) are accepted. */
const Tool = v.pipe(
  v.looseObject({
    type: v.nullish(text()),
    name: v.pipe(text(), v.minLength(1, "must not be empty")),
    description: v.nullish(text()),
    input_schema: v.nullish(v.looseObject({}, "must be a JSON Schema object")),
    defer_loading: flag(),
  }, "must be an object"),
  v.forward(v.check((tool) => (tool.type != null && tool.type !== "custom") || tool.input_schema != null, "Field required"), ["input_schema"]),
);

const parallel = { disable_parallel_tool_use: flag() };
const ToolChoice = v.variant("type", [
  v.looseObject({ type: v.literal("auto"), ...parallel }),
  v.looseObject({ type: v.literal("any"), ...parallel }),
  v.looseObject({ type: v.literal("tool"), name: text(), ...parallel }),
  v.looseObject({ type: v.literal("none") }),
], 'must be an object with type "auto", "any", "tool" or "none"');

const unit = (rule: string) => v.nullish(v.pipe(v.number(rule), v.minValue(0, rule), v.maxValue(1, rule)));

/**
 * Extended thinking: on with a budget (at least 1,024 tokens and below max_tokens, as the API requires), off, or
 * left to the model ("adaptive").
 */
const Thinking = v.variant("type", [
  v.looseObject({ type: v.literal("enabled"), budget_tokens: v.pipe(v.number("must be an integer"), v.integer("must be an integer"), v.minValue(1024, "must be at least 1024")) }),
  v.looseObject({ type: v.literal("disabled") }),
  v.looseObject({ type: v.literal("adaptive") }),
], 'must be an object with type "enabled", "disabled" or "adaptive"');

/** Fields shared by /v1/messages and /v1/messages/count_tokens. */
const promptFields = {
  model: v.pipe(text(), v.minLength(1, "must not be empty")),
  messages: v.pipe(v.array(Message, "must be an array of messages"), v.minLength(1, "must contain at least one message")),
  system: v.nullish(v.pipe(v.unknown(), v.transform(asBlocks), v.array(v.looseObject({ type: v.string(), text: text() }), "must be a string or an array of text blocks"))),
  tools: v.nullish(v.array(Tool, "must be an array of tools")),
  tool_choice: v.nullish(ToolChoice),
  output_config: v.nullish(v.looseObject({ format: v.nullish(v.looseObject({ type: text(), schema: v.nullish(v.looseObject({})) })) })),
  thinking: v.nullish(Thinking),
};

/** POST /v1/messages/count_tokens body. */
export const CountTokensRequestSchema = v.looseObject(promptFields, "must be a JSON object");

/** POST /v1/messages body. */
export const MessagesRequestSchema = v.pipe(v.looseObject({
  ...promptFields,
  max_tokens: v.pipe(v.number("must be an integer"), v.integer("must be an integer"), v.minValue(1, "must be at least 1")),
  stream: flag(),
  temperature: unit("must be a number between 0 and 1"),
  top_p: unit("must be a number between 0 and 1"),
  top_k: v.nullish(v.pipe(v.number("must be an integer"), v.integer("must be an integer"), v.minValue(0, "must be at least 0"))),
  stop_sequences: v.nullish(v.array(text(), "must be an array of strings")),
}, "must be a JSON object"), v.forward(
  v.check((body) => body.thinking?.type !== "enabled" || body.thinking.budget_tokens < body.max_tokens, "must be less than max_tokens"),
  ["thinking", "budget_tokens"],
));

export type CountTokensRequest = v.InferOutput<typeof CountTokensRequestSchema>;
export type MessagesRequest = v.InferOutput<typeof MessagesRequestSchema>;
export type ContentBlockParam = v.InferOutput<typeof ContentBlock>;
export type ToolResultBlockParam = v.InferOutput<typeof ResultBlock>;
export type ToolParam = v.InferOutput<typeof Tool>;

/** Validates a body; the first violation becomes an `invalid_request` EngineError `<path>: <rule>`. */
export function parseRequest<S extends v.GenericSchema>(schema: S, body: unknown): v.InferOutput<S> {
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    throw new EngineError("invalid_request", "body: must be a JSON object", { param: "body" });
  }
  const result = v.safeParse(schema, body);
  if (result.success) return result.output;
  const issue = result.issues[0];
  const path = v.getDotPath(issue) ?? "body";
  const rule = issue.received === "undefined" ? "Field required" : issue.message;
  throw new EngineError("invalid_request", `${path}: ${rule}`, { param: path });
}

const VERSION = /^\d{4}-\d{2}-\d{2}$/;

/** `anthropic-version` is optional; when present it must look like a date (its value does not change behaviour). */
export function checkAnthropicVersion(value: string | null): void {
  if (value !== null && !VERSION.test(value.trim())) {
    throw new EngineError("invalid_request", `anthropic-version: "${value}" is not a valid version`, { param: "anthropic-version" });
  }
}
