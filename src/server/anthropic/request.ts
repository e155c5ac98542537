/**
 * Messages request → ChatRequest. Keeps block order; merges consecutive same-role turns (the API merges them
 * too); keeps `role:"system"` turns in place; a final assistant turn stays last and is continued (prefill).
 * @see https://docs.claude.com/en/api/messages
 */
import { EngineError, type ChatRequest, type ImagePart, type Message, type Part, type TextPart, type ToolChoice, type ToolSpec } from "../../engine/index.js";
import { resolveToolChoice } from "../tool-choice.js";
import type { ContentBlockParam, CountTokensRequest, MessagesRequest, ToolParam, ToolResultBlockParam } from "./schema.js";
import { renderToolReference } from "./tool-reference.js";
import { checkThinkingSignature } from "./thinking-signature.js";

/** Claude Code's attribution block changes on every request and would defeat the prefix cache. */
const BILLING_HEADER = "x-anthropic-billing-header:";

/** Translates a validated Messages request. The server's output cap applies later, to every surface alike. */
export function fromMessagesRequest(body: MessagesRequest): ChatRequest {
  const request = fromCountTokensRequest(body);
  request.maxTokens = body.max_tokens;
  request.sampling = dropUndefined({ temperature: body.temperature ?? undefined, topP: body.top_p ?? undefined, topK: body.top_k ?? undefined });
  if (body.stop_sequences?.length) request.stop = body.stop_sequences;
  return request;
}

/** Translates the prompt part (what count_tokens counts: the same rendering as a Messages call). */
export function fromCountTokensRequest(body: CountTokensRequest): ChatRequest {
  const tools = body.tools ?? [];
  const messages = mergeTurns(body.messages.map((message, i) => ({
    role: message.role,
    parts: message.content.flatMap((block, j) => toParts(block, `messages.${i}.content.${j}`, tools)),
  })));
  const system = (body.system ?? []).map((block) => block.text).filter((t) => !t.startsWith(BILLING_HEADER)).join("\n\n");
  const request: ChatRequest = { model: body.model, messages, maxTokens: 1 };
  if (system) request.system = system;
  const offered = toToolSpecs(tools, referencedTools(body.messages));
  if (offered.length > 0) request.tools = offered;
  const toolChoice = toToolChoice(body.tool_choice, tools);
  if (toolChoice) request.toolChoice = toolChoice;
  const format = body.output_config?.format;
  if (format?.type === "json_schema" && format.schema) request.responseFormat = { type: "json-schema", schema: format.schema };
  // Templates with a thinking switch follow it; "adaptive" leaves the model's default.
  if (body.thinking && body.thinking.type !== "adaptive") request.thinking = body.thinking.type === "enabled";
  if (body.thinking?.type === "enabled") request.thinkingBudget = body.thinking.budget_tokens;
  return request;
}

function toParts(block: ContentBlockParam, path: string, tools: ToolParam[]): Part[] {
  switch (block.type) {
    case "text": return block.text ? [{ type: "text", text: block.text as string }] : [];
    case "image": return [toImage(block.source as Record<string, unknown>, `${path}.source`)];
    case "document": return [documentText(block.source as Record<string, unknown>, `${path}.source`)];
    case "tool_use": return [{ type: "tool-call", id: block.id as string, name: block.name as string, input: block.input ?? {} }];
    case "tool_result": return [{
      type: "tool-result",
      toolCallId: block.tool_use_id as string,
      content: ((block.content ?? []) as ToolResultBlockParam[]).flatMap((inner, k) => toResultParts(inner, `${path}.content.${k}`, tools)),
      ...(block.is_error ? { isError: true } : {}),
    }];
    case "thinking": {
      if (!block.thinking) return [];
      checkThinkingSignature(block.thinking, block.signature ?? undefined, path);
      return [{ type: "reasoning", text: block.thinking, ...(block.signature ? { signature: block.signature } : {}) }];
    }
    case "tool_reference": return [{ type: "text", text: renderToolReference(block.tool_name as string, tools) }];
    // redacted_thinking carries no readable text; server-tool echoes have no meaning to a local model.
    default: return [];
  }
}

function toResultParts(block: ToolResultBlockParam, path: string, tools: ToolParam[]): Array<TextPart | ImagePart> {
  switch (block.type) {
    case "text": return [{ type: "text", text: block.text as string }];
    case "image": return [toImage(block.source as Record<string, unknown>, `${path}.source`)];
    case "document": return [documentText(block.source as Record<string, unknown>, `${path}.source`)];
    case "tool_reference": return [{ type: "text", text: renderToolReference(block.tool_name as string, tools) }];
    default: return [];
  }
}

/** Images pass through; a backend without vision refuses them with a 400. */
function toImage(source: Record<string, unknown>, path: string): ImagePart {
  if (source.type === "base64" && typeof source.data === "string") {
    return { type: "image", mediaType: String(source.media_type ?? "image/png"), source: { kind: "base64", data: source.data } };
  }
  if (source.type === "url" && typeof source.url === "string") {
    return { type: "image", mediaType: "image/*", source: { kind: "url", url: source.url } };
  }
  throw new EngineError("invalid_request", `${path}: image source type "${String(source.type)}" is not supported (use base64 or url)`, { param: path });
}

/** Plain-text documents become text; PDFs, files and URLs cannot be read by a local text model. */
function documentText(source: Record<string, unknown>, path: string): TextPart {
  if (source.type === "text" && typeof source.data === "string") return { type: "text", text: source.data };
  if (source.type === "content" && typeof source.content === "string") return { type: "text", text: source.content };
  if (source.type === "content" && Array.isArray(source.content)) {
    const texts = source.content.filter((b): b is { type: "text"; text: string } => b?.type === "text" && typeof b.text === "string");
    return { type: "text", text: texts.map((b) => b.text).join("\n") };
  }
  throw new EngineError("invalid_request", `${path}: document source type "${String(source.type)}" is not supported (only plain-text documents are)`, { param: path });
}

/** Same-role neighbours become one turn; turns left without parts are dropped. */
function mergeTurns(messages: Message[]): Message[] {
  const merged: Message[] = [];
  for (const message of messages) {
    if (message.parts.length === 0) continue;
    const last = merged.at(-1);
    if (last && last.role === message.role) last.parts.push(...message.parts);
    else merged.push({ role: message.role, parts: [...message.parts] });
  }
  return merged;
}

/**
 * Custom tools become ToolSpecs. Deferred tools (`defer_loading`, Claude Code's tool search) are offered only once
 * a `tool_reference` in history has loaded them; Anthropic-defined and server tools have no schema to offer.
 */
function toToolSpecs(tools: ToolParam[], referenced: Set<string>): ToolSpec[] {
  return tools
    .filter((tool) => tool.input_schema && (!tool.defer_loading || referenced.has(tool.name)))
    .map((tool) => ({ name: tool.name, ...(tool.description ? { description: tool.description } : {}), inputSchema: tool.input_schema as Record<string, unknown> }));
}

function referencedTools(messages: MessagesRequest["messages"]): Set<string> {
  const names = new Set<string>();
  for (const message of messages) {
    for (const block of message.content) {
      const inner = block.type === "tool_result" ? ((block.content ?? []) as ToolResultBlockParam[]) : [block as ToolResultBlockParam];
      for (const b of inner) if (b.type === "tool_reference") names.add(b.tool_name as string);
    }
  }
  return names;
}

function toToolChoice(choice: MessagesRequest["tool_choice"], tools: ToolParam[]): ToolChoice | undefined {
  if (!choice) return undefined;
  const name = choice.type === "tool" ? choice.name : "";
  return resolveToolChoice(choice.type === "any" ? "required" : choice.type === "tool" ? { name } : choice.type, {
    parallel: "disable_parallel_tool_use" in choice && choice.disable_parallel_tool_use != null ? !choice.disable_parallel_tool_use : undefined,
    tools: tools.filter((tool) => tool.input_schema).map((tool) => tool.name),
    refuse: (problem) => problem === "no-tools"
      ? new EngineError("invalid_request", `tool_choice: "${choice.type}" requires at least one tool in tools`, { param: "tool_choice" })
      : new EngineError("invalid_request", `tool_choice.name: no tool named "${name}" in tools`, { param: "tool_choice.name" }),
  });
}

function dropUndefined<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}
