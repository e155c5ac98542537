/** The chat's state, the actions that change it and the effects it asks the shell (the Ink app) to perform. */
import type { ChatRequest, SamplingOptions, GenerationEvent } from "../engine/index.js";
import { EMPTY_INPUT, type InputBuffer } from "./input-buffer.js";
import { toEntries, type Entry, type SavedConversation } from "./conversation.js";

/** What the next request is made of. */
export interface ChatSettings {
  model: string;
  system?: string;
  sampling: SamplingOptions;
  maxTokens: number;
  stop?: string[];
}

/** The reply being generated. Events for any other id (a stopped reply's stragglers) are ignored. */
export interface ActiveGeneration {
  id: number;
  /** The transcript entry the reply streams into. */
  entryId: number;
  inputTokens?: number;
  /** Text deltas seen so far (the engine sends one per token; the finish event has the exact count). */
  outputTokens: number;
  /** Unix ms of the first token, for tokens/s. */
  firstTokenAt?: number;
}

/** Something the reducer wants done outside it; the shell runs it and reports back with an action. */
export type Effect =
  | { id: number; kind: "generate"; generationId: number; request: ChatRequest }
  | { id: number; kind: "save"; path: string; conversation: SavedConversation }
  | { id: number; kind: "switch-model"; ref: string }
  | { id: number; kind: "exit" };

/** Spreads over each member of a union (a plain Omit would collapse it). */
type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;
export type EffectRequest = DistributiveOmit<Effect, "id">;

export interface ChatState {
  settings: ChatSettings;
  /** Context window of the model in tokens, when the source knows it. */
  contextSize?: number;
  entries: Entry[];
  /** Bumped by /clear so the printed part of the transcript starts afresh. */
  epoch: number;
  input: InputBuffer;
  /** Earlier inputs, oldest first. */
  history: string[];
  /** Position while browsing history with Up/Down; undefined while editing a fresh input. */
  historyIndex?: number;
  /** The fresh input put aside while browsing history. */
  draft?: string;
  generation?: ActiveGeneration;
  /** A model switch is in progress: input waits. */
  loading?: string;
  /** Decode speed of the latest reply. */
  tokensPerSecond?: number;
  /** Tokens of the conversation so far (prompt + reply of the latest turn). */
  contextUsed?: number;
  /** The first Ctrl+C was pressed; a second one exits. */
  exitArmed: boolean;
  /** A one-off hint for the status line, cleared by the next key. */
  flash?: string;
  effects: Effect[];
  nextId: number;
}

export type ChatAction =
  | { type: "insert"; text: string }
  | { type: "newline" }
  | { type: "backspace" }
  | { type: "delete" }
  | { type: "move"; to: "left" | "right" | "home" | "end" }
  | { type: "up" }
  | { type: "down" }
  | { type: "complete" }
  | { type: "submit" }
  /** Esc: stop the reply. */
  | { type: "stop" }
  /** Ctrl+C: stop the reply and arm exit; the second one exits. */
  | { type: "interrupt" }
  /** An event of generation `id`, received at Unix ms `at` (time comes in, so the reducer stays pure). */
  | { type: "generation"; id: number; event: GenerationEvent; at: number }
  | { type: "effects-started"; upTo: number }
  | { type: "saved"; path: string }
  | { type: "model-switched"; model: string; contextSize?: number }
  | { type: "effect-failed"; message: string };

/** The state a chat opens with, optionally continuing a loaded conversation. */
export function initialChatState(settings: ChatSettings, options: { contextSize?: number; loaded?: SavedConversation } = {}): ChatState {
  const entries = options.loaded ? toEntries(options.loaded, 1) : [];
  return {
    settings: { ...settings, system: settings.system ?? options.loaded?.system },
    contextSize: options.contextSize,
    entries,
    epoch: 0,
    input: EMPTY_INPUT,
    history: [],
    exitArmed: false,
    effects: [],
    nextId: entries.length + 1,
  };
}
