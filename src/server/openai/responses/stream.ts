/**
 * GenerationEvents → Responses API stream events and the final `response` object
 * (https://platform.openai.com/docs/api-reference/responses-streaming). Each engine block becomes one
 * output item (message, reasoning or function_call), announced by output_item.added and finalized by
 * output_item.done; `sequence_number` rises from 0; the stream ends with response.completed or response.failed.
 * The non-streaming route folds the same events and returns the final object, so both paths agree.
 */
import type { GenerationEvent } from "../../../engine/index.js";
import type { IdFactory } from "../../../lib/ids.js";
import { formatSseEvent } from "../../sse.js";
import { guardStream } from "../../stream-guard.js";
import { mapStream } from "../../../lib/map-stream.js";
import { toOpenAIErrorBody } from "../wire/errors.js";
import { toChatLogprobs, type ChatTokenLogprob } from "../wire/logprobs.js";
import { argumentsText, toCallId } from "../wire/response-meta.js";
import { toResponsesUsage, type ResponsesUsage } from "../wire/usage.js";

/** Identity of one response plus the id source for its output items (msg_, rs_, fc_). */
export interface ResponsesMeta {
  id: string;
  /** Unix seconds. */
  created: number;
  model: string;
  ids: IdFactory;
  /** `include: ["message.output_text.logprobs"]`: text deltas and parts carry their tokens' logprobs. */
  logprobs?: boolean;
}

export type OutputItem =
  | { id: string; type: "message"; role: "assistant"; status: string; content: Array<{ type: "output_text"; text: string; annotations: []; logprobs?: ChatTokenLogprob[] }> }
  | { id: string; type: "reasoning"; summary: []; content: Array<{ type: "reasoning_text"; text: string }> }
  | { id: string; type: "function_call"; status: string; name: string; arguments: string; call_id: string };

/** The `response` object (the subset of fields clients read). */
export interface ResponseObject {
  id: string;
  object: "response";
  created_at: number;
  status: "in_progress" | "completed" | "incomplete" | "failed";
  error: { code: string; message: string } | null;
  incomplete_details: { reason: "max_output_tokens" } | null;
  model: string;
  output: OutputItem[];
  usage: ResponsesUsage | null;
}

/** One stream event: its type plus type-specific fields. */
export type ResponsesEvent = { type: string; sequence_number: number } & Record<string, unknown>;

/** A fold over engine events: `push` returns the stream events an engine event produces; `response` is the state. */
export function createResponsesEncoder(meta: ResponsesMeta): { push(event: GenerationEvent): ResponsesEvent[]; response: ResponseObject } {
  const response: ResponseObject = {
    id: meta.id, object: "response", created_at: meta.created, status: "in_progress",
    error: null, incomplete_details: null, model: meta.model, output: [], usage: null,
  };
  let sequence = 0;
  let reasoned = false;
  const emit = (type: string, fields: Record<string, unknown>): ResponsesEvent => ({ type, sequence_number: sequence++, ...fields });
  const outputIndexOf = new Map<number, number>();
  const itemAt = (blockIndex: number) => {
    const outputIndex = outputIndexOf.get(blockIndex) ?? 0;
    return { outputIndex, item: response.output[outputIndex]!, ref: { item_id: response.output[outputIndex]!.id, output_index: outputIndex } };
  };
  const open = (blockIndex: number, item: OutputItem): ResponsesEvent => {
    outputIndexOf.set(blockIndex, response.output.length);
    response.output.push(item);
    return emit("response.output_item.added", { output_index: response.output.length - 1, item: structuredClone(item) });
  };

  const push = (event: GenerationEvent): ResponsesEvent[] => {
    switch (event.type) {
      case "start": return [emit("response.created", { response: snapshot(response) }), emit("response.in_progress", { response: snapshot(response) })];
      case "text-start": {
        const added = open(event.index, { id: meta.ids("msg_"), type: "message", role: "assistant", status: "in_progress", content: [] });
        const { item, ref } = itemAt(event.index);
        const part = { type: "output_text" as const, text: "", annotations: [] as [], ...(meta.logprobs ? { logprobs: [] } : {}) };
        (item as Extract<OutputItem, { type: "message" }>).content.push(part);
        return [added, emit("response.content_part.added", { ...ref, content_index: 0, part: structuredClone(part) })];
      }
      case "text-delta": {
        const { item, ref } = itemAt(event.index);
        const part = (item as Extract<OutputItem, { type: "message" }>).content[0]!;
        const logprobs = meta.logprobs ? toChatLogprobs(event.logprobs ?? []).content : [];
        part.text += event.text;
        part.logprobs?.push(...logprobs);
        return event.text ? [emit("response.output_text.delta", { ...ref, content_index: 0, delta: event.text, logprobs })] : [];
      }
      case "text-end": {
        const { item, ref } = itemAt(event.index);
        const message = item as Extract<OutputItem, { type: "message" }>;
        message.status = "completed";
        const part = message.content[0]!;
        return [
          emit("response.output_text.done", { ...ref, content_index: 0, text: part.text, logprobs: part.logprobs ?? [] }),
          emit("response.content_part.done", { ...ref, content_index: 0, part: structuredClone(part) }),
          emit("response.output_item.done", { output_index: ref.output_index, item: structuredClone(message) }),
        ];
      }
      case "reasoning-start": {
        reasoned = true;
        const added = open(event.index, { id: meta.ids("rs_"), type: "reasoning", summary: [], content: [{ type: "reasoning_text", text: "" }] });
        const { ref } = itemAt(event.index);
        return [added, emit("response.content_part.added", { ...ref, content_index: 0, part: { type: "reasoning_text", text: "" } })];
      }
      case "reasoning-delta": {
        const { item, ref } = itemAt(event.index);
        (item as Extract<OutputItem, { type: "reasoning" }>).content[0]!.text += event.text;
        return event.text ? [emit("response.reasoning_text.delta", { ...ref, content_index: 0, delta: event.text })] : [];
      }
      case "reasoning-end": {
        const { item, ref } = itemAt(event.index);
        const part = (item as Extract<OutputItem, { type: "reasoning" }>).content[0]!;
        return [
          emit("response.reasoning_text.done", { ...ref, content_index: 0, text: part.text }),
          emit("response.content_part.done", { ...ref, content_index: 0, part: structuredClone(part) }),
          emit("response.output_item.done", { output_index: ref.output_index, item: structuredClone(item) }),
        ];
      }
      case "tool-call-start":
        return [open(event.index, { id: meta.ids("fc_"), type: "function_call", status: "in_progress", name: event.name, arguments: "", call_id: toCallId(event.id) })];
      case "tool-call-delta": {
        const { item, ref } = itemAt(event.index);
        (item as Extract<OutputItem, { type: "function_call" }>).arguments += event.json;
        return event.json ? [emit("response.function_call_arguments.delta", { ...ref, delta: event.json })] : [];
      }
      case "tool-call-end": {
        const { item, ref } = itemAt(event.index);
        const call = item as Extract<OutputItem, { type: "function_call" }>;
        call.arguments = argumentsText(call.arguments, event.input);
        call.status = "completed";
        return [
          emit("response.function_call_arguments.done", { ...ref, name: call.name, arguments: call.arguments }),
          emit("response.output_item.done", { output_index: ref.output_index, item: structuredClone(call) }),
        ];
      }
      case "finish": {
        // A length cut is reported as status "incomplete" inside response.completed: Codex ends a turn only on
        // response.completed or response.failed (https://platform.openai.com/docs/api-reference/responses-streaming).
        response.status = event.reason === "length" ? "incomplete" : "completed";
        if (event.reason === "length") response.incomplete_details = { reason: "max_output_tokens" };
        response.usage = toResponsesUsage(event.usage, reasoned);
        return [emit("response.completed", { response: snapshot(response) })];
      }
      case "error": {
        const { error } = toOpenAIErrorBody(event.error);
        response.status = "failed";
        response.error = { code: error.code ?? error.type, message: error.message };
        return [emit("response.failed", { response: snapshot(response) })];
      }
      default: return [];
    }
  };
  return { push, response };
}

/**
 * Encodes a whole event stream as `event:`/`data:` SSE frames; a failure ends it with response.failed, numbered
 * after what was sent.
 */
export function encodeResponsesStream(events: AsyncIterable<GenerationEvent>, meta: ResponsesMeta): AsyncIterable<string> {
  const encoder = createResponsesEncoder(meta);
  const encode = (event: GenerationEvent) => encoder.push(event).map((out) => formatSseEvent(out.type, out));
  // Each event's frames as one string: one write per event.
  return guardStream(mapStream(events, { map: (event) => encode(event).join("") || undefined }), (error) => encode({ type: "error", error }));
}

/** Folds a whole event stream into the final response object (non-streaming /v1/responses). */
export async function collectResponse(events: AsyncIterable<GenerationEvent>, meta: ResponsesMeta): Promise<ResponseObject> {
  const encoder = createResponsesEncoder(meta);
  for await (const event of events) {
    // Without a stream there is no in-band channel: a late error becomes the HTTP error.
    if (event.type === "error") throw event.error;
    encoder.push(event);
  }
  return encoder.response;
}

function snapshot(response: ResponseObject): ResponseObject {
  return structuredClone(response);
}
