/**
 * POST /v1/chat/completions body → ChatRequest (https://platform.openai.com/docs/api-reference/chat/create).
 * system and developer messages merge into one system text (chat templates reject `developer` and late system
 * turns); assistant tool_calls keep their order as typed parts.
 */
import { EngineError, type ImagePart, type Message, type Part, type TextPart, type ToolSpec } from "../../../engine/index.js";
import type { RequestedToolChoice } from "../../tool-choice.js";
import { optional, parseArguments, toImagePart, toIncludeUsage, toResponseFormat, toSampling, toStop, toThinking, toToolChoice, type ChatRequestDraft } from "../wire/request-fields.js";
import { parseBody } from "../wire/schema.js";
import { chatCompletionRequestSchema, type ChatCompletionRequestBody, type ChatContentBody, type ChatMessageBody } from "./schema.js";

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
  const format = wire.response_format;
  const system: string[] = [];
  const messages: Message[] = [];
  wire.messages.forEach((message, index) => {
    if (message.role === "system" || message.role === "developer") system.push(textOf(message.content));
    else messages.push(toMessage(message, `messages.${index}`));
  });
  const tools = wire.tools?.map(toToolSpec) ?? [];
  // Checked even without tools: requiring a call then is refused.
  const toolChoice = toToolChoice(toRequestedChoice(wire.tool_choice), wire.parallel_tool_calls, tools.map((tool) => tool.name));
  const request: ChatRequestDraft = {
    model: wire.model,
    ...(system.length ? { system: system.join("\n\n") } : {}),
    messages,
    ...(tools.length ? { tools, toolChoice } : {}),
    sampling: toSampling(wire),
    ...optional("stop", toStop(wire.stop)),
    ...optional("maxTokens", wire.max_completion_tokens ?? wire.max_tokens ?? undefined),
    ...optional("responseFormat", toResponseFormat(format?.type === "json_schema" ? { type: format.type, ...format.json_schema } : format)),
    ...optional("logprobs", toLogprobCount(wire.logprobs, wire.top_logprobs)),
    ...optional("thinking", toThinking(wire.reasoning_effort)),
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

/** chat's `tool_choice`: a mode, or `{type: "function", function: {name}}`. */
function toRequestedChoice(choice: ChatCompletionRequestBody["tool_choice"]): RequestedToolChoice {
  if (!choice) return "auto";
  return typeof choice === "string" ? choice : { name: choice.function.name };
}
