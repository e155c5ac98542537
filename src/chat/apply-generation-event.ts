/**
 * Folds one GenerationEvent into the chat state: the streamed reply grows, the status line's figures follow.
 * Events come from the local engine or from an HTTP stream (remote-source.ts); both speak the same language.
 */
import type { GenerationEvent, Usage } from "../engine/index.js";
import type { ChatState } from "./chat-state.js";
import type { Entry } from "./conversation.js";

type AssistantEntry = Extract<Entry, { kind: "assistant" }>;

/** Applies an event of the active generation; events of any other generation are ignored. */
export function applyGenerationEvent(state: ChatState, id: number, event: GenerationEvent, at: number): ChatState {
  const generation = state.generation;
  if (!generation || generation.id !== id) return state;
  switch (event.type) {
    case "start":
      return { ...state, generation: { ...generation, inputTokens: event.inputTokens }, contextUsed: event.inputTokens || state.contextUsed };
    case "text-delta": {
      const firstTokenAt = generation.firstTokenAt ?? at;
      const outputTokens = generation.outputTokens + 1;
      const next = { ...state, generation: { ...generation, firstTokenAt, outputTokens } };
      const withText = updateReply(next, generation.entryId, (entry) => ({ ...entry, status: "streaming", text: entry.text + event.text }));
      return {
        ...withText,
        tokensPerSecond: rateOf(outputTokens, firstTokenAt, at) ?? state.tokensPerSecond,
        contextUsed: generation.inputTokens ? generation.inputTokens + outputTokens : state.contextUsed,
      };
    }
    case "reasoning-delta":
      return updateReply(state, generation.entryId, (entry) => ({ ...entry, status: "streaming", reasoning: entry.reasoning + event.text }));
    case "finish": {
      const status = event.reason === "aborted" ? "stopped" : "done";
      const ended = updateReply(state, generation.entryId, (entry) => ({ ...entry, status, truncated: event.reason === "length" }));
      return { ...ended, generation: undefined, ...finalFigures(state, event.usage, at) };
    }
    case "error": {
      const failed = updateReply(state, generation.entryId, (entry) => ({ ...entry, status: "error", error: event.error.message }));
      return { ...failed, generation: undefined };
    }
    default:
      return state;
  }
}

/** Marks the active reply stopped (Esc, Ctrl+C); the partial text stays. */
export function stopGeneration(state: ChatState): ChatState {
  if (!state.generation) return state;
  const stopped = updateReply(state, state.generation.entryId, (entry) => ({ ...entry, status: "stopped" }));
  return { ...stopped, generation: undefined };
}

function updateReply(state: ChatState, entryId: number, update: (entry: AssistantEntry) => AssistantEntry): ChatState {
  const entries = state.entries.map((entry) => (entry.id === entryId && entry.kind === "assistant" ? update(entry) : entry));
  return { ...state, entries };
}

/** Exact figures from the finish event's usage. */
function finalFigures(state: ChatState, usage: Usage, at: number): Pick<ChatState, "tokensPerSecond" | "contextUsed"> {
  const firstTokenAt = state.generation?.firstTokenAt;
  const rate = firstTokenAt === undefined ? undefined : rateOf(usage.outputTokens, firstTokenAt, at);
  const used = usage.inputTokens + usage.outputTokens;
  return { tokensPerSecond: rate ?? state.tokensPerSecond, contextUsed: used > 0 ? used : state.contextUsed };
}

/** Tokens per second after the first token (its latency is the prompt's, not decoding's). */
function rateOf(tokens: number, firstTokenAt: number, at: number): number | undefined {
  const seconds = (at - firstTokenAt) / 1000;
  return tokens > 1 && seconds > 0 ? (tokens - 1) / seconds : undefined;
}
