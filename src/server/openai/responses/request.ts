/**
 * POST /v1/responses body → ChatRequest (https://platform.openai.com/docs/api-reference/responses/create).
 * `instructions` and system/developer items merge into one system text; consecutive assistant-side items
 * (reasoning, message, function_call) form one assistant turn, as Codex splits a turn into items. Item and
 * tool types kiln cannot serve (web search, local shell, custom tools) are skipped, not rejected.
 */
import * as v from "valibot";
import type { ImagePart, Message, Part, TextPart, ToolSpec } from "../../../engine/index.js";
import type { RequestedToolChoice } from "../../tool-choice.js";
import { optional, parseArguments, toImagePart, toResponseFormat, toSampling, toThinking, toToolChoice, type ChatRequestDraft } from "../wire/request-fields.js";
import { parseBody, positiveIntSchema, rangeSchema, reasoningEffortSchema, seedSchema } from "../wire/schema.js";

const partSchema = v.object({
  type: v.string(),
  text: v.nullish(v.string()),
  refusal: v.nullish(v.string()),
  image_url: v.nullish(v.string()),
});
const contentSchema = v.union([v.string(), v.array(partSchema)]);

const messageItemSchema = v.object({ role: v.picklist(["user", "assistant", "system", "developer"]), content: contentSchema });
const functionCallSchema = v.object({ name: v.string(), arguments: v.nullish(v.string()), call_id: v.string() });
// Codex also sends outputs that answer no call (context it injects, e.g. its goal: a `name` and no `call_id`).
const functionOutputSchema = v.object({ call_id: v.nullish(v.string()), name: v.nullish(v.string()), output: contentSchema });
const reasoningSchema = v.object({
  summary: v.nullish(v.array(v.object({ text: v.string() }))),
  content: v.nullish(v.array(v.object({ text: v.string() }))),
});

const textFormatSchema = v.nullish(v.object({
  format: v.nullish(v.object({
    type: v.picklist(["text", "json_object", "json_schema"]),
    name: v.nullish(v.string()),
    schema: v.nullish(v.record(v.string(), v.unknown())),
  })),
}));

const responsesRequestSchema = v.object({
  model: v.pipe(v.string(), v.minLength(1, "Expected a model id")),
  instructions: v.nullish(v.string()),
  input: v.union([v.string(), v.array(v.looseObject({ type: v.nullish(v.string()) }))]),
  tools: v.nullish(v.array(v.looseObject({ type: v.string() }))),
  tool_choice: v.nullish(v.union([
    v.picklist(["none", "auto", "required"]),
    v.looseObject({ type: v.string(), name: v.nullish(v.string()) }),
  ])),
  parallel_tool_calls: v.nullish(v.boolean()),
  max_output_tokens: v.nullish(positiveIntSchema),
  temperature: v.nullish(rangeSchema(0, 2)),
  top_p: v.nullish(rangeSchema(0, 1)),
  // Not in OpenAI's Responses API, but vLLM's: read like chat's, so a seeded request repeats on every route.
  seed: v.nullish(seedSchema()),
  stream: v.nullish(v.boolean()),
  text: textFormatSchema,
  include: v.nullish(v.array(v.string())),
  top_logprobs: v.nullish(rangeSchema(0, 20, true)),
  reasoning: v.nullish(v.object({ effort: reasoningEffortSchema })),
});

/** The `include` value that asks for the output text's logprobs. */
const LOGPROBS_INCLUDE = "message.output_text.logprobs";

const functionToolSchema = v.object({
  name: v.string(),
  description: v.nullish(v.string()),
  parameters: v.nullish(v.record(v.string(), v.unknown())),
});

/** The translated request plus the wire options that shape the response. */
export interface ResponsesCall {
  request: ChatRequestDraft;
  stream: boolean;
}

/** Validates and translates a Responses API body. Throws EngineError invalid_request naming the field. */
export function fromResponsesRequest(body: unknown): ResponsesCall {
  const wire = parseBody(responsesRequestSchema, body);
  const system: string[] = wire.instructions ? [wire.instructions] : [];
  const messages: Message[] = [];
  const items = typeof wire.input === "string" ? [{ type: "message", role: "user", content: wire.input }] : wire.input;
  items.forEach((item, index) => addItem(item, `input.${index}`, system, messages));
  const tools = (wire.tools ?? []).flatMap((tool, index) => tool.type === "function" ? [toToolSpec(tool, `tools.${index}`)] : []);
  const request: ChatRequestDraft = {
    model: wire.model,
    ...optional("system", system.length ? system.join("\n\n") : undefined),
    messages,
    ...(tools.length ? { tools, toolChoice: toToolChoice(toRequestedChoice(wire.tool_choice), wire.parallel_tool_calls, tools.map((tool) => tool.name)) } : {}),
    sampling: toSampling(wire),
    ...optional("maxTokens", wire.max_output_tokens),
    ...optional("responseFormat", toResponseFormat(wire.text?.format)),
    ...optional("logprobs", wire.include?.includes(LOGPROBS_INCLUDE) ? wire.top_logprobs ?? 0 : undefined),
    ...optional("thinking", toThinking(wire.reasoning?.effort)),
  };
  return { request, stream: wire.stream === true };
}

function addItem(item: { type?: string | null }, param: string, system: string[], messages: Message[]): void {
  const type = item.type ?? "message";
  if (type === "message") {
    const message = parseBody(messageItemSchema, item, param);
    if (message.role === "system" || message.role === "developer") system.push(toParts(message.content).map(textOf).join(""));
    else appendTo(messages, message.role, toParts(message.content), message.role === "assistant");
  } else if (type === "function_call") {
    const call = parseBody(functionCallSchema, item, param);
    const input = parseArguments(call.arguments, `${param}.arguments`);
    appendTo(messages, "assistant", [{ type: "tool-call", id: call.call_id, name: call.name, input }], true);
  } else if (type === "function_call_output") {
    const output = parseBody(functionOutputSchema, item, param);
    appendTo(messages, "tool", [{ type: "tool-result", toolCallId: output.call_id ?? output.name ?? "", content: toParts(output.output) }], true);
  } else if (type === "reasoning") {
    const reasoning = parseBody(reasoningSchema, item, param);
    const text = [...(reasoning.content ?? []), ...(reasoning.summary ?? [])].map((part) => part.text).join("\n");
    if (text) appendTo(messages, "assistant", [{ type: "reasoning", text }], true);
  }
}

/** Adds parts to the last message when it has the same role and `merge` allows it, else opens a new message. */
function appendTo(messages: Message[], role: Message["role"], parts: Part[], merge: boolean): void {
  const last = messages.at(-1);
  if (merge && last?.role === role) last.parts.push(...parts);
  else messages.push({ role, parts });
}

function toParts(content: v.InferOutput<typeof contentSchema>): Array<TextPart | ImagePart> {
  if (typeof content === "string") return content ? [{ type: "text", text: content }] : [];
  return content.flatMap((part): Array<TextPart | ImagePart> => {
    if (part.type === "input_image" && part.image_url) return [toImagePart(part.image_url)];
    const text = part.text ?? part.refusal;
    return text ? [{ type: "text", text }] : [];
  });
}

function textOf(part: TextPart | ImagePart): string {
  return part.type === "text" ? part.text : "";
}

function toToolSpec(tool: unknown, param: string): ToolSpec {
  const wire = parseBody(functionToolSchema, tool, param);
  return { name: wire.name, ...optional("description", wire.description), inputSchema: wire.parameters ?? { type: "object", properties: {} } };
}

/** `tool_choice`: a mode, or `{type: "function", name}`; a choice of a tool kiln does not serve leaves the model free. */
function toRequestedChoice(choice: v.InferOutput<typeof responsesRequestSchema>["tool_choice"]): RequestedToolChoice {
  if (typeof choice === "string") return choice;
  return choice?.type === "function" && choice.name ? { name: choice.name } : "auto";
}
