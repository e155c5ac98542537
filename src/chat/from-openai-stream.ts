/**
 * Translates OpenAI chat completion chunks (https://platform.openai.com/docs/api-reference/chat-streaming) back
 * into GenerationEvents. Chunks carry no block boundaries, so a block opens when its kind of delta first
 * arrives and closes when another kind (or the end) comes. One reader per response.
 */
import type { FinishReason, GenerationEvent, Usage } from "../engine/events.js";
import { parseToolInput } from "./parse-tool-input.js";
import { EngineError } from "../engine/errors.js";

type Json = Record<string, any>;

export interface OpenAiStreamReader {
  /** Events for one parsed chunk. */
  read(chunk: Json): GenerationEvent[];
  /** Events that end the stream (`[DONE]` or the body's end): closes the open block and finishes. */
  end(): GenerationEvent[];
}

export function createOpenAiStreamReader(): OpenAiStreamReader {
  const events: GenerationEvent[] = [];
  let started = false;
  let open: { kind: "text" | "reasoning" | "tool-call"; index: number; toolIndex?: number; json: string } | undefined;
  let nextIndex = 0;
  let reason: FinishReason = "stop";
  let usage: Usage = { inputTokens: 0, cachedInputTokens: 0, outputTokens: 0 };

  const close = (): void => {
    if (!open) return;
    if (open.kind === "tool-call") events.push({ type: "tool-call-end", index: open.index, input: parseToolInput(open.json) });
    else events.push({ type: open.kind === "text" ? "text-end" : "reasoning-end", index: open.index });
    open = undefined;
  };
  const ensure = (kind: "text" | "reasoning"): number => {
    if (open?.kind === kind) return open.index;
    close();
    open = { kind, index: nextIndex++, json: "" };
    events.push({ type: kind === "text" ? "text-start" : "reasoning-start", index: open.index });
    return open.index;
  };
  const readToolCall = (call: Json): void => {
    if (open?.kind !== "tool-call" || open.toolIndex !== call.index) {
      close();
      open = { kind: "tool-call", index: nextIndex++, toolIndex: call.index, json: "" };
      events.push({ type: "tool-call-start", index: open.index, id: String(call.id ?? ""), name: String(call.function?.name ?? "") });
    }
    const fragment = call.function?.arguments;
    if (typeof fragment === "string" && fragment !== "") {
      open.json += fragment;
      events.push({ type: "tool-call-delta", index: open.index, json: fragment });
    }
  };

  return {
    read(chunk) {
      if (chunk.error) return [{ type: "error", error: new EngineError("backend_failure", String(chunk.error.message ?? "the server reported an error")) }];
      if (!started) {
        started = true;
        events.push({ type: "start", model: String(chunk.model ?? ""), inputTokens: 0, cachedInputTokens: 0 });
      }
      const choice = chunk.choices?.[0];
      const delta = choice?.delta ?? {};
      const thinking = delta.reasoning_content ?? delta.reasoning;
      if (typeof thinking === "string" && thinking !== "") events.push({ type: "reasoning-delta", index: ensure("reasoning"), text: thinking });
      if (typeof delta.content === "string" && delta.content !== "") events.push({ type: "text-delta", index: ensure("text"), text: delta.content });
      for (const call of delta.tool_calls ?? []) readToolCall(call);
      if (choice?.finish_reason) reason = toFinishReason(choice.finish_reason);
      if (chunk.usage) {
        const cached = chunk.usage.prompt_tokens_details?.cached_tokens ?? 0;
        usage = { inputTokens: chunk.usage.prompt_tokens ?? 0, cachedInputTokens: cached, outputTokens: chunk.usage.completion_tokens ?? 0 };
      }
      return events.splice(0);
    },
    end() {
      if (!started) events.push({ type: "start", model: "", inputTokens: 0, cachedInputTokens: 0 });
      close();
      events.push({ type: "finish", reason, usage });
      return events.splice(0);
    },
  };
}

function toFinishReason(reason: unknown): FinishReason {
  switch (reason) {
    case "length": return "length";
    case "tool_calls": case "function_call": return "tool-calls";
    default: return "stop";
  }
}
