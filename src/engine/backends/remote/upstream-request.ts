/**
 * Internal ChatRequest → the upstream's OpenAI-compatible chat completions body.
 * This is the one place kiln speaks OpenAI *to* another server (vLLM, SGLang, llama-server, another kiln);
 * see https://platform.openai.com/docs/api-reference/chat/create.
 */
import type { ChatRequest, Message, Part, ToolChoice } from "../../messages.js";

type UpstreamMessage = Record<string, unknown>;

/** Builds the streaming request body for `upstreamModel`. Stop sequences go upstream so it stops early. */
export function toUpstreamChatBody(request: ChatRequest, upstreamModel: string): Record<string, unknown> {
  const sampling = request.sampling ?? {};
  const body: Record<string, unknown> = {
    model: upstreamModel,
    messages: toUpstreamMessages(request),
    max_tokens: request.maxTokens,
    stream: true,
    stream_options: { include_usage: true },
  };
  if (sampling.temperature !== undefined) body.temperature = sampling.temperature;
  if (sampling.topP !== undefined) body.top_p = sampling.topP;
  if (sampling.topK !== undefined) body.top_k = sampling.topK; // vLLM, SGLang, llama-server and kiln accept it
  if (sampling.seed !== undefined) body.seed = sampling.seed;
  if (sampling.presencePenalty !== undefined) body.presence_penalty = sampling.presencePenalty;
  if (sampling.frequencyPenalty !== undefined) body.frequency_penalty = sampling.frequencyPenalty;
  if (sampling.logitBias !== undefined) body.logit_bias = sampling.logitBias;
  if (sampling.ignoreEos) body.ignore_eos = true; // vLLM, SGLang, llama-server and kiln accept it
  if (request.stop?.length) body.stop = request.stop;
  if (request.logprobs !== undefined) Object.assign(body, { logprobs: true, top_logprobs: request.logprobs });
  if (request.tools?.length) {
    body.tools = request.tools.map((tool) => ({
      type: "function",
      function: { name: tool.name, description: tool.description, parameters: tool.inputSchema },
    }));
    Object.assign(body, toUpstreamToolChoice(request.toolChoice));
  }
  if (request.responseFormat?.type === "json") body.response_format = { type: "json_object" };
  if (request.responseFormat?.type === "json-schema") {
    body.response_format = { type: "json_schema", json_schema: { name: request.responseFormat.name ?? "response", schema: request.responseFormat.schema, strict: true } };
  }
  return body;
}

function toUpstreamToolChoice(choice: ToolChoice | undefined): Record<string, unknown> {
  if (!choice) return {};
  const parallel = "parallel" in choice && choice.parallel === false ? { parallel_tool_calls: false } : {};
  switch (choice.type) {
    case "auto": return { tool_choice: "auto", ...parallel };
    case "none": return { tool_choice: "none" };
    case "required": return { tool_choice: "required", ...parallel };
    case "tool": return { tool_choice: { type: "function", function: { name: choice.name } }, ...parallel };
  }
}

function toUpstreamMessages(request: ChatRequest): UpstreamMessage[] {
  const out: UpstreamMessage[] = [];
  if (request.system) out.push({ role: "system", content: request.system });
  for (const message of request.messages) out.push(...toUpstreamTurn(message));
  return out;
}

/** One internal turn can become several upstream messages: tool results are messages of their own there. */
function toUpstreamTurn(message: Message): UpstreamMessage[] {
  const results = message.parts.filter((part) => part.type === "tool-result");
  const rest = message.parts.filter((part) => part.type !== "tool-result");
  const out: UpstreamMessage[] = results.map((part) => ({
    role: "tool",
    tool_call_id: part.toolCallId,
    content: (part.isError ? "[error] " : "") + textOf(part.content),
  }));
  if (rest.length === 0) return out;
  if (message.role === "assistant") {
    const calls = rest.filter((part) => part.type === "tool-call");
    const text = textOf(rest);
    out.push({
      role: "assistant",
      content: text || (calls.length ? null : ""),
      ...(calls.length ? { tool_calls: calls.map((call) => ({ id: call.id, type: "function", function: { name: call.name, arguments: JSON.stringify(call.input ?? {}) } })) } : {}),
    });
    return out;
  }
  out.push({ role: message.role === "tool" ? "user" : message.role, content: rest.map(toUpstreamContentPart) });
  return out;
}

function toUpstreamContentPart(part: Part): Record<string, unknown> {
  if (part.type === "image") {
    const url = part.source.kind === "url" ? part.source.url : `data:${part.mediaType};base64,${part.source.data}`;
    return { type: "image_url", image_url: { url } };
  }
  return { type: "text", text: textOf([part]) };
}

function textOf(parts: Part[]): string {
  return parts.map((part) => (part.type === "text" ? part.text : "")).join("");
}
