/**
 * The chat as a pure reducer: (state, action) → state. Actions are keys the user pressed and GenerationEvents
 * from a source (local engine or HTTP stream); anything with a side effect (generate, save, switch model, exit)
 * is queued in `state.effects` for the Ink shell to perform.
 */
import { toSavedConversation, toRequestMessages } from "./conversation.js";
import { applyGenerationEvent, stopGeneration } from "./apply-generation-event.js";
import { EMPTY_INPUT, deleteBackward, deleteForward, inputOf, insertText, moveCursor, moveLine } from "./input-buffer.js";
import { completeSlashCommand, formatHelp, parseSlashCommand } from "./slash-commands.js";
import type { ChatAction, ChatState, EffectRequest } from "./chat-state.js";

export function chatReducer(state: ChatState, action: ChatAction): ChatState {
  // Any key but a second Ctrl+C disarms exit and clears the one-off hint.
  const base = action.type === "generation" || action.type === "effects-started" ? state : { ...state, exitArmed: false, flash: undefined };
  switch (action.type) {
    case "insert": return { ...base, input: insertText(base.input, action.text) };
    case "newline": return { ...base, input: insertText(base.input, "\n") };
    case "backspace": return { ...base, input: deleteBackward(base.input) };
    case "delete": return { ...base, input: deleteForward(base.input) };
    case "move": return { ...base, input: moveCursor(base.input, action.to) };
    case "up": return moveUp(base);
    case "down": return moveDown(base);
    case "complete": {
      const completed = completeSlashCommand(base.input.text);
      return completed === undefined ? base : { ...base, input: inputOf(completed) };
    }
    case "submit": return submit(base);
    case "stop": return stopGeneration(base);
    case "interrupt":
      if (state.exitArmed) return queueEffect(base, { kind: "exit" });
      return { ...stopGeneration(base), exitArmed: true, flash: "press Ctrl+C again to exit" };
    case "generation": return applyGenerationEvent(state, action.id, action.event, action.at);
    case "effects-started": return { ...state, effects: state.effects.filter((effect) => effect.id > action.upTo) };
    case "saved": return addNotice(base, `saved the conversation to ${action.path}`);
    case "model-switched":
      return addNotice({ ...base, loading: undefined, settings: { ...base.settings, model: action.model }, contextSize: action.contextSize, contextUsed: undefined, tokensPerSecond: undefined }, `now chatting with ${action.model}`);
    case "effect-failed": return addNotice({ ...base, loading: undefined }, action.message, "error");
  }
}

function submit(state: ChatState): ChatState {
  const text = state.input.text;
  if (text.trim() === "") return state;
  if (state.generation) return { ...state, flash: "a reply is streaming: Esc stops it" };
  if (state.loading) return { ...state, flash: `wait: ${state.loading}` };
  const history = state.history.at(-1) === text ? state.history : [...state.history, text];
  const cleared = { ...state, input: EMPTY_INPUT, history, historyIndex: undefined, draft: undefined };
  if (text.trimStart().startsWith("/")) return runSlashCommand(cleared, text);
  const withUser = { ...cleared, entries: [...cleared.entries, { kind: "user" as const, id: cleared.nextId, text }], nextId: cleared.nextId + 1 };
  return startGeneration(withUser);
}

function runSlashCommand(state: ChatState, line: string): ChatState {
  const { name, arg } = parseSlashCommand(line) ?? { name: "", arg: "" };
  switch (name) {
    case "help": return addNotice(state, formatHelp());
    case "system":
      return addNotice({ ...state, settings: { ...state.settings, system: arg || undefined } }, arg ? "system prompt set" : "system prompt cleared");
    case "temperature": {
      const value = Number(arg);
      if (arg === "" || !Number.isFinite(value) || value < 0 || value > 2) return addNotice(state, "usage: /temperature <x> with x from 0 to 2", "error");
      return addNotice({ ...state, settings: { ...state.settings, sampling: { ...state.settings.sampling, temperature: value } } }, `temperature set to ${value}`);
    }
    case "model":
      if (!arg) return addNotice(state, `the model is ${state.settings.model}; usage: /model <ref>`);
      return queueEffect({ ...state, loading: `loading ${arg}` }, { kind: "switch-model", ref: arg });
    case "clear":
      return addNotice({ ...state, entries: [], epoch: state.epoch + 1, contextUsed: undefined }, "started a new conversation");
    case "save": {
      if (!arg) return addNotice(state, "usage: /save <file>", "error");
      const conversation = toSavedConversation(state.settings.model, state.settings.system, state.entries);
      return queueEffect(state, { kind: "save", path: arg, conversation });
    }
    case "retry": return retry(state);
    case "exit": case "quit": return queueEffect(state, { kind: "exit" });
    default: return addNotice(state, `unknown command /${name}: /help lists the commands`, "error");
  }
}

/**
 * Discards the replies after the last user turn and generates a new one. The transcript only grows (what is
 * printed stays printed), so the old reply stays on screen, marked, out of the conversation.
 */
function retry(state: ChatState): ChatState {
  const lastUser = state.entries.findLastIndex((entry) => entry.kind === "user");
  if (lastUser === -1) return addNotice(state, "nothing to retry yet", "error");
  const entries = state.entries.map((entry, index) => (index > lastUser && entry.kind === "assistant" ? { ...entry, discarded: true } : entry));
  return startGeneration({ ...state, entries });
}

function startGeneration(state: ChatState): ChatState {
  const { settings } = state;
  const request = {
    model: settings.model,
    ...(settings.system ? { system: settings.system } : {}),
    messages: toRequestMessages(state.entries),
    sampling: settings.sampling,
    maxTokens: settings.maxTokens,
    ...(settings.stop?.length ? { stop: settings.stop } : {}),
  };
  const entryId = state.nextId;
  const generationId = state.nextId + 1;
  const reply = { kind: "assistant" as const, id: entryId, text: "", reasoning: "", status: "waiting" as const };
  const next = { ...state, entries: [...state.entries, reply], generation: { id: generationId, entryId, outputTokens: 0 }, nextId: state.nextId + 2 };
  return queueEffect(next, { kind: "generate", generationId, request });
}

function queueEffect(state: ChatState, effect: EffectRequest): ChatState {
  return { ...state, effects: [...state.effects, { ...effect, id: state.nextId }], nextId: state.nextId + 1 } as ChatState;
}

function addNotice(state: ChatState, text: string, tone: "info" | "error" = "info"): ChatState {
  return { ...state, entries: [...state.entries, { kind: "notice", id: state.nextId, text, tone }], nextId: state.nextId + 1 };
}

/** Up: the line above in a multi-line input, else the previous history entry. */
function moveUp(state: ChatState): ChatState {
  const moved = moveLine(state.input, "up");
  if (moved) return { ...state, input: moved };
  if (state.history.length === 0 || state.historyIndex === 0) return state;
  const index = (state.historyIndex ?? state.history.length) - 1;
  const draft = state.historyIndex === undefined ? state.input.text : state.draft;
  return { ...state, historyIndex: index, draft, input: inputOf(state.history[index]!) };
}

/** Down: the line below, else the next history entry, and past the newest the input put aside. */
function moveDown(state: ChatState): ChatState {
  const moved = moveLine(state.input, "down");
  if (moved) return { ...state, input: moved };
  if (state.historyIndex === undefined) return state;
  const index = state.historyIndex + 1;
  if (index >= state.history.length) return { ...state, historyIndex: undefined, draft: undefined, input: inputOf(state.draft ?? "") };
  return { ...state, historyIndex: index, input: inputOf(state.history[index]!) };
}
