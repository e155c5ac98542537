/**
 * Request fields the three OpenAI APIs share, each translated once: sampling, stop, stream_options, tool-call
 * arguments, image URLs, tool_choice and the structured-output format.
 * @see https://platform.openai.com/docs/api-reference/chat/create
 */
import { EngineError, type ChatRequest, type ImagePart, type ResponseFormat, type SamplingOptions, type ToolChoice } from "../../../engine/index.js";
import { JsonTooDeepError, parseBoundedJson } from "../../../lib/json-depth.js";
import { tooDeep } from "../../read-json-body.js";
import { resolveToolChoice, type RequestedToolChoice } from "../../tool-choice.js";

/** A ChatRequest whose `maxTokens` may still be open: the route fills the default from the model's context. */
export type ChatRequestDraft = Omit<ChatRequest, "maxTokens"> & { maxTokens?: number };

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
  ignore_eos?: boolean | null;
}): SamplingOptions {
  return {
    ...optional("logitBias", wire.logit_bias && Object.keys(wire.logit_bias).length ? wire.logit_bias : undefined),
    ...optional("temperature", wire.temperature),
    ...optional("topP", wire.top_p),
    ...optional("seed", wire.seed),
    ...optional("presencePenalty", wire.presence_penalty),
    ...optional("frequencyPenalty", wire.frequency_penalty),
    ...optional("ignoreEos", wire.ignore_eos === true ? true : undefined),
  };
}

/**
 * A reasoning effort as the chat template's thinking switch (Qwen3's enable_thinking): "none" turns thinking off,
 * any other effort on; how much a model thinks is its own (a local model has no effort setting).
 */
export function toThinking(effort: string | null | undefined): boolean | undefined {
  return effort == null ? undefined : effort !== "none";
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

/** `tool_choice` (already read into a mode or a name) with `parallel_tool_calls`, refused in OpenAI's words. */
export function toToolChoice(choice: RequestedToolChoice, parallel: boolean | null | undefined, tools: readonly string[]): ToolChoice {
  return resolveToolChoice(choice, {
    parallel,
    tools,
    refuse: (problem) => new EngineError("invalid_request", problem === "no-tools"
      ? "Invalid 'tool_choice': a tool call can only be required when 'tools' are given"
      : `Invalid 'tool_choice': no tool named '${typeof choice === "object" ? choice.name : ""}' is in 'tools'`, { param: "tool_choice" }),
  });
}

/**
 * A structured-output format (chat `response_format`, Responses `text.format`, read into one shape): text is no
 * constraint; json_object, or json_schema without a schema, is any JSON object.
 * @see https://platform.openai.com/docs/guides/structured-outputs
 */
export function toResponseFormat(format: { type: string; name?: string | null; schema?: Record<string, unknown> | null } | null | undefined): ResponseFormat | undefined {
  if (!format || format.type === "text") return undefined;
  if (format.type === "json_object" || !format.schema) return { type: "json" };
  return { type: "json-schema", schema: format.schema, ...optional("name", format.name) };
}

/** Keeps an object free of `undefined`/`null` fields: `{...optional("k", v)}`. */
export function optional<K extends string, V>(key: K, value: V | null | undefined): { [P in K]?: V } {
  return value === null || value === undefined ? {} : ({ [key]: value } as { [P in K]?: V });
}
