/**
 * The upstream's chat-completion SSE stream → internal GenerationEvents (text, reasoning, tool calls, finish with
 * usage). Chunk shapes: https://platform.openai.com/docs/api-reference/chat-streaming. vLLM's extensions are read
 * where present: `stop_reason` (the matched stop string) and per-chunk usage (`continuous_usage_stats`), which
 * gives the prompt size before the first token.
 */
import type { FinishReason, GenerationEvent, TokenLogprob, Usage } from "../../events.js";
import { EngineError } from "../../../errors/engine-error.js";
import { randomId } from "../../../lib/ids.js";
import { readSse } from "../../../lib/read-sse.js";
import { readToolArguments } from "../../tool-arguments.js";

interface UpstreamUsage { prompt_tokens?: number; completion_tokens?: number; prompt_tokens_details?: { cached_tokens?: number } | null }
interface UpstreamToolDelta { index?: number; id?: string; function?: { name?: string; arguments?: string } }
interface UpstreamLogprob { token?: string; logprob?: number; top_logprobs?: Array<{ token?: string; logprob?: number }> | null }
interface UpstreamChunk {
  choices?: Array<{
    delta?: { content?: string | null; reasoning_content?: string | null; reasoning?: string | null; tool_calls?: UpstreamToolDelta[] };
    logprobs?: { content?: UpstreamLogprob[] | null } | null;
    finish_reason?: string | null;
    stop_reason?: string | number | null;
  }>;
  usage?: UpstreamUsage | null;
  error?: { message?: string };
}

/** Yields the JSON payload of each event until `[DONE]`. */
export async function* readSseData(body: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  for await (const { data } of readSse(body)) {
    if (data === "[DONE]") return;
    if (data) yield data;
  }
}

/** Folds upstream chunks into internal events; `start` is emitted with the first chunk. */
export class UpstreamEventMapper {
  private started = false;
  private nextIndex = 0;
  private open?: { kind: "text" | "reasoning" | "tool-call"; index: number; upstreamIndex?: number; json?: string };
  private usage: Usage = { inputTokens: 0, cachedInputTokens: 0, outputTokens: 0 };
  private finishReason?: string;
  private stopReason?: string;
  private sawToolCall = false;

  constructor(private readonly model: string, private readonly stops: string[] = []) {}

  /** Maps one parsed chunk. */
  map(chunk: UpstreamChunk): GenerationEvent[] {
    if (chunk.error) throw new EngineError("backend_failure", `upstream error: ${chunk.error.message ?? "unknown"}`);
    const events: GenerationEvent[] = [];
    if (chunk.usage) this.readUsage(chunk.usage);
    if (!this.started) {
      this.started = true;
      events.push({ type: "start", model: this.model, inputTokens: this.usage.inputTokens, cachedInputTokens: this.usage.cachedInputTokens });
    }
    for (const choice of chunk.choices ?? []) {
      const delta = choice.delta ?? {};
      const reasoning = delta.reasoning_content ?? delta.reasoning;
      if (reasoning) events.push(...this.append("reasoning", reasoning));
      if (delta.content) events.push(...this.append("text", delta.content, toLogprobs(choice.logprobs?.content)));
      for (const call of delta.tool_calls ?? []) events.push(...this.appendToolCall(call));
      if (choice.finish_reason) this.finishReason = choice.finish_reason;
      if (typeof choice.stop_reason === "string") this.stopReason = choice.stop_reason;
    }
    return events;
  }

  /** Closes the open block and emits `finish` once the upstream stream has ended. */
  finish(): GenerationEvent[] {
    if (!this.finishReason) throw new EngineError("backend_failure", "upstream stream ended without a finish reason");
    const events = this.closeOpen(this.finishReason === "length");
    const { reason, stopSequence } = this.resolveFinish();
    events.push({ type: "finish", reason, ...(stopSequence !== undefined ? { stopSequence } : {}), usage: { ...this.usage } });
    return events;
  }

  private resolveFinish(): { reason: FinishReason; stopSequence?: string } {
    if (this.finishReason === "length") return { reason: "length" };
    if (this.sawToolCall || this.finishReason === "tool_calls") return { reason: "tool-calls" };
    if (this.stopReason !== undefined && this.stops.includes(this.stopReason)) return { reason: "stop-sequence", stopSequence: this.stopReason };
    return { reason: "stop" };
  }

  private readUsage(usage: UpstreamUsage): void {
    const input = usage.prompt_tokens ?? this.usage.inputTokens;
    this.usage = { inputTokens: input, cachedInputTokens: usage.prompt_tokens_details?.cached_tokens ?? this.usage.cachedInputTokens, outputTokens: usage.completion_tokens ?? this.usage.outputTokens };
  }

  private append(kind: "text" | "reasoning", text: string, logprobs?: TokenLogprob[]): GenerationEvent[] {
    const events = this.open?.kind === kind ? [] : [...this.closeOpen(), ...this.openBlock(kind)];
    const index = this.open!.index;
    events.push(kind === "reasoning" ? { type: "reasoning-delta", index, text } : logprobs ? { type: "text-delta", index, text, logprobs } : { type: "text-delta", index, text });
    return events;
  }

  private appendToolCall(call: UpstreamToolDelta): GenerationEvent[] {
    const upstreamIndex = call.index ?? 0;
    const events: GenerationEvent[] = [];
    if (this.open?.kind !== "tool-call" || this.open.upstreamIndex !== upstreamIndex) {
      if (!call.function?.name) throw new EngineError("backend_failure", "upstream interleaved tool calls or sent a call without a name");
      events.push(...this.closeOpen());
      const index = this.nextIndex++;
      this.open = { kind: "tool-call", index, upstreamIndex, json: "" };
      this.sawToolCall = true;
      events.push({ type: "tool-call-start", index, id: call.id ?? randomId(), name: call.function.name });
    }
    const fragment = call.function?.arguments ?? "";
    if (fragment) {
      this.open!.json += fragment;
      events.push({ type: "tool-call-delta", index: this.open!.index, json: fragment });
    }
    return events;
  }

  private openBlock(kind: "text" | "reasoning"): GenerationEvent[] {
    const index = this.nextIndex++;
    this.open = { kind, index };
    return [kind === "text" ? { type: "text-start", index } : { type: "reasoning-start", index }];
  }

  /** `cut`: the upstream hit its token limit, so a call's arguments may end mid-JSON. */
  private closeOpen(cut = false): GenerationEvent[] {
    const open = this.open;
    if (!open) return [];
    this.open = undefined;
    if (open.kind === "text") return [{ type: "text-end", index: open.index }];
    if (open.kind === "reasoning") return [{ type: "reasoning-end", index: open.index }];
    return [{ type: "tool-call-end", index: open.index, input: readToolArguments(open.json ?? "", "upstream", cut) }];
  }
}

/** The upstream's chat logprobs (when it sent any) in the internal shape. */
function toLogprobs(content: UpstreamLogprob[] | null | undefined): TokenLogprob[] | undefined {
  if (!content?.length) return undefined;
  return content.map((entry) => ({
    token: entry.token ?? "",
    logprob: entry.logprob ?? 0,
    top: (entry.top_logprobs ?? []).map((top) => ({ token: top.token ?? "", logprob: top.logprob ?? 0 })),
  }));
}
