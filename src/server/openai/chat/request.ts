/**
 * POST /v1/chat/completions body → ChatRequest (https://platform.openai.com/docs/api-reference/chat/create).
 * system and developer messages merge into one system text (chat templates reject `developer` and late system
 * turns); assistant tool_calls keep their order as typed parts.
 */
import { EngineError } from "../../engine/errors.js";
import { JsonTooDeepError, parseBoundedJson } from "../../lib/json-depth.js";
import { tooDeep } from "../read-json-body.js";
import type { ChatRequest, ImagePart, Message, Part, ResponseFormat, SamplingOptions, TextPart, ToolChoice, ToolSpec } from "../../engine/messages.js";
import { chatCompletionRequestSchema, parseBody, type ChatCompletionRequestBody, type ChatContentBody, type ChatMessageBody } from "./schema.js";

/** A ChatRequest whose `maxTokens` may still be open: the route fills the default from the model's context. */
export type ChatRequestDraft = Omit<ChatRequest, "maxTokens"> & { maxTokens?: number };

/** The translated request plus the wire options that shape the response. */
export interface ChatCompletionCall {
  request: ChatRequestDraft;
  /** Choices to generate (`n`). */
  n: number;
  stream: boolean;
  includeUsage: boolean;
}

/** Validates and translates a chat completion body. Throws EngineError invalid_request naming the field. */
export function fromChatCompletionRequest(body: unknown): ChatCompletionCall {
  const wire = parseBody(chatCompletionRequestSchema, body);
  const system: string[] = [];
  const messages: Message[] = [];
  wire.messages.forEach((message, index) => {
    if (message.role === "system" || message.role === "developer") system.push(textOf(message.content));
    else messages.push(toMessage(message, `messages.${index}`));
  });
  const tools = wire.tools?.map(toToolSpec);
  if (!tools?.length && wire.tool_choice && wire.tool_choice !== "none" && wire.tool_choice !== "auto") {
    throw new EngineError("invalid_request", "Invalid 'tool_choice': a tool call can only be required when 'tools' are given", { param: "tool_choice" });
  }
  const request: ChatRequestDraft = {
    model: wire.model,
    ...(system.length ? { system: system.join("\n\n") } : {}),
    messages,
    ...(tools?.length ? { tools, toolChoice: toToolChoice(wire, tools) } : {}),
    sampling: toSampling(wire),
    ...optional("stop", toStop(wire.stop)),
    ...optional("maxTokens", wire.max_completion_tokens ?? wire.max_tokens ?? undefined),
    ...optional("responseFormat", toResponseFormat(wire.response_format)),
    ...optional("logprobs", toLogprobCount(wire.logprobs, wire.top_logprobs)),
  };
  return { request, n: wire.n ?? 1, stream: wire.stream === true, includeUsage: toIncludeUsage(wire) };
}

/** `logprobs: true` with `top_logprobs` alternatives (default 0); `top_logprobs` alone is refused, as OpenAI does. */
function toLogprobCount(logprobs: boolean | null | undefined, top: number | null | undefined): number | undefined {
  if (top != null && logprobs !== true) {
    throw new EngineError("invalid_request", "Invalid 'top_logprobs': only allowed when 'logprobs' is true", { param: "top_logprobs" });
  }
  return logprobs === true ? top ?? 0 : undefined;
}

/** `stream_options` only makes sense on a stream: OpenAI refuses it otherwise, naming the field. */
export function toIncludeUsage(wire: { stream?: boolean | null; stream_options?: { include_usage?: boolean | null } | null }): boolean {
  if (wire.stream_options != null && wire.stream !== true) {
    throw new EngineError("invalid_request", "Invalid 'stream_options': only allowed when 'stream' is true", { param: "stream_options" });
  }
  return wire.stream_options?.include_usage === true;
}

/** Sampling fields shared by chat and legacy completions; omitted fields stay omitted (backend defaults). */
export function toSampling(wire: {
  temperature?: number | null; top_p?: number | null; seed?: number | null;
  presence_penalty?: number | null; frequency_penalty?: number | null; logit_bias?: Record<string, number> | null;
}): SamplingOptions {
  return {
    ...optional("logitBias", wire.logit_bias && Object.keys(wire.logit_bias).length ? wire.logit_bias : undefined),
    ...optional("temperature", wire.temperature),
    ...optional("topP", wire.top_p),
    ...optional("seed", wire.seed),
    ...optional("presencePenalty", wire.presence_penalty),
    ...optional("frequencyPenalty", wire.frequency_penalty),
  };
}

/** `stop` as a list; empty strings are dropped because they would stop at once. */
export function toStop(stop: string | string[] | null | undefined): string[] | undefined {
  if (stop === null || stop === undefined) return undefined;
  const list = (Array.isArray(stop) ? stop : [stop]).filter((text) => text.length > 0);
  return list.length ? list : undefined;
}

/** Parses tool-call arguments (a JSON string on the wire) into the object the engine carries. */
export function parseArguments(text: string | null | undefined, param: string): unknown {
  if (text === null || text === undefined || text.trim() === "") return {};
  try {
    return parseBoundedJson(text, param);
  } catch (error) {
    if (error instanceof JsonTooDeepError) throw tooDeep(error);
    throw new EngineError("invalid_request", `Invalid '${param}': the arguments are not valid JSON`, { param });
  }
}

/** An image URL part: data: URLs become base64 images; other URLs are passed on (backends decide). */
export function toImagePart(url: string): ImagePart {
  const match = /^data:([^;,]+);base64,(.*)$/s.exec(url);
  if (match) return { type: "image", mediaType: match[1]!, source: { kind: "base64", data: match[2]! } };
  return { type: "image", mediaType: "image/*", source: { kind: "url", url } };
}

/** Keeps an object free of `undefined`/`null` fields: `{...optional("k", v)}`. */
export function optional<K extends string, V>(key: K, value: V | null | undefined): { [P in K]?: V } {
  return value === null || value === undefined ? {} : ({ [key]: value } as { [P in K]?: V });
}

function toMessage(message: Exclude<ChatMessageBody, { role: "system" | "developer" }>, param: string): Message {
  switch (message.role) {
    case "user": return { role: "user", parts: toParts(message.content) };
    case "tool": return { role: "tool", parts: [{ type: "tool-result", toolCallId: message.tool_call_id, content: toParts(message.content) }] };
    case "assistant": {
      const reasoning = message.reasoning_content ?? message.reasoning;
      const parts: Part[] = reasoning ? [{ type: "reasoning", text: reasoning }] : [];
      parts.push(...toParts(message.content ?? ""));
      message.tool_calls?.forEach((call, index) => parts.push({
        type: "tool-call",
        id: call.id,
        name: call.function.name,
        input: parseArguments(call.function.arguments, `${param}.tool_calls.${index}.function.arguments`),
      }));
      return { role: "assistant", parts };
    }
  }
}

function toParts(content: ChatContentBody): Array<TextPart | ImagePart> {
  if (typeof content === "string") return content === "" ? [] : [{ type: "text", text: content }];
  return content.flatMap((part): Array<TextPart | ImagePart> => {
    if (part.type === "text") return [{ type: "text", text: part.text }];
    if (part.type === "refusal") return [{ type: "text", text: part.refusal }];
    return [toImagePart(typeof part.image_url === "string" ? part.image_url : part.image_url.url)];
  });
}

function textOf(content: ChatContentBody): string {
  if (typeof content === "string") return content;
  return content.map((part) => (part.type === "text" ? part.text : "")).join("");
}

function toToolSpec(tool: NonNullable<ChatCompletionRequestBody["tools"]>[number]): ToolSpec {
  return {
    name: tool.function.name,
    ...optional("description", tool.function.description),
    inputSchema: tool.function.parameters ?? { type: "object", properties: {} },
  };
}

function toToolChoice(wire: ChatCompletionRequestBody, tools: ToolSpec[]): ToolChoice {
  const parallel = wire.parallel_tool_calls ?? undefined;
  const choice = wire.tool_choice ?? "auto";
  if (choice === "none") return { type: "none" };
  if (choice === "auto" || choice === "required") return { type: choice, ...optional("parallel", parallel) };
  const name = choice.function.name;
  if (!tools.some((tool) => tool.name === name)) {
    throw new EngineError("invalid_request", `Invalid 'tool_choice': no tool named '${name}' is in 'tools'`, { param: "tool_choice" });
  }
  return { type: "tool", name, ...optional("parallel", parallel) };
}

function toResponseFormat(format: ChatCompletionRequestBody["response_format"]): ResponseFormat | undefined {
  if (!format || format.type === "text") return undefined;
  if (format.type === "json_object" || !format.json_schema.schema) return { type: "json" };
  return { type: "json-schema", schema: format.json_schema.schema, ...optional("name", format.json_schema.name) };
}
