/** The chat screen: the transcript (printed once finished), the live reply, the input and the status line. */
import { Box, Static, useApp, useInput, useStdout, type Key } from "ink";
import type { ChatAction, ChatState } from "./chat-state.js";
import type { ChatSource } from "./chat-source.js";
import type { Entry } from "./conversation.js";
import { useChat } from "./use-chat.js";
import { EntryView } from "./components/entry-view.js";
import { InputBox } from "./components/input-box.js";
import { StatusLine } from "./components/status-line.js";

/** Rows the screen keeps for everything but the live reply: input borders, hint, status line, margins. */
const LIVE_RESERVED_ROWS = 9;

export interface ChatAppProps {
  source: ChatSource;
  initialState: ChatState;
}

export function ChatApp({ source, initialState }: ChatAppProps) {
  const { exit } = useApp();
  const [state, dispatch] = useChat(source, initialState, exit);
  useInput((input, key) => {
    for (const action of toActions(input, key)) dispatch(action);
  });
  const { stdout } = useStdout();
  const { printed, live } = splitEntries(state.entries);
  // Rows left for the live reply once the input box, hints and status line are drawn.
  const bounds = { rows: Math.max(3, (stdout.rows || 24) - LIVE_RESERVED_ROWS - state.input.text.split("\n").length), columns: stdout.columns || 80 };
  return (
    <Box flexDirection="column">
      <Static key={state.epoch} items={printed}>
        {(entry) => <EntryView key={entry.id} entry={entry} />}
      </Static>
      {live.map((entry) => <EntryView key={entry.id} entry={entry} bounds={bounds} />)}
      <InputBox input={state.input} busy={state.generation !== undefined || state.loading !== undefined} />
      <StatusLine state={state} />
    </Box>
  );
}

/** Finished entries are printed once (Ink's Static); from the first unfinished reply on, they re-render. */
function splitEntries(entries: Entry[]): { printed: Entry[]; live: Entry[] } {
  const firstLive = entries.findIndex((entry) => entry.kind === "assistant" && (entry.status === "waiting" || entry.status === "streaming"));
  return firstLive === -1 ? { printed: entries, live: [] } : { printed: entries.slice(0, firstLive), live: entries.slice(firstLive) };
}

/**
 * Maps what stdin delivered to actions. One read can hold several keys when they come fast (text then Enter,
 * Ctrl+C twice) or a paste: such a chunk is taken character by character. A CR at its very end sends; line
 * breaks inside it come from a paste and stay in the input.
 */
export function toActions(input: string, key: Key): ChatAction[] {
  if (input.length > 1 && /[\x00-\x1f\x7f]/.test(input)) return toChunkActions(input);
  const action = toAction(input, key);
  return action ? [action] : [];
}

function toChunkActions(chunk: string): ChatAction[] {
  const actions: ChatAction[] = [];
  let text = "";
  const push = (action: ChatAction): void => {
    if (text !== "") actions.push({ type: "insert", text });
    text = "";
    actions.push(action);
  };
  const chars = [...chunk];
  chars.forEach((char, position) => {
    if (char === "\r" && position === chars.length - 1) push({ type: "submit" });
    else if (char === "\r" || char === "\n") text += "\n";
    else if (char === "\x03") push({ type: "interrupt" });
    else if (char === "\x7f" || char === "\b") push({ type: "backspace" });
    else if (char === "\t" || char >= " ") text += char;
    // Other control characters have no meaning here and are dropped.
  });
  if (text !== "") actions.push({ type: "insert", text });
  return actions;
}

/** Maps one key press to an action. Terminals send Alt+Enter as ESC CR and Ctrl+J as a bare LF. */
function toAction(input: string, key: Key): ChatAction | undefined {
  if (key.ctrl && input === "c") return { type: "interrupt" };
  if (key.return) return key.meta || key.shift ? { type: "newline" } : { type: "submit" };
  if (input === "\n" || (key.ctrl && input === "j")) return { type: "newline" };
  if (key.escape) return { type: "stop" };
  if (key.upArrow) return { type: "up" };
  if (key.downArrow) return { type: "down" };
  if (key.leftArrow) return { type: "move", to: "left" };
  if (key.rightArrow) return { type: "move", to: "right" };
  if (key.home || (key.ctrl && input === "a")) return { type: "move", to: "home" };
  if (key.end || (key.ctrl && input === "e")) return { type: "move", to: "end" };
  if (key.tab) return { type: "complete" };
  // Most terminals send DEL (0x7f) for Backspace, which Ink reports as `delete`.
  if (key.backspace || key.delete) return { type: "backspace" };
  if (key.ctrl && input === "d") return { type: "delete" };
  if (key.ctrl || key.meta || input === "") return undefined;
  return { type: "insert", text: input };
}
