/**
 * The transcript and how it becomes a request, a saved file, and back. Saved conversations use the Anthropic
 * Messages request shape (https://docs.anthropic.com/en/api/messages): `{ model, system, messages: [{ role,
 * content }] }`, so a file can be replayed against any Messages endpoint.
 */
import type { Message } from "../engine/index.js";

/** One line of the transcript. */
export type Entry =
  | { kind: "user"; id: number; text: string }
  | {
      kind: "assistant";
      id: number;
      text: string;
      /** Model reasoning, shown dimmed; never sent back. */
      reasoning: string;
      /** waiting: sent, nothing back yet; stopped: Esc (the partial reply stays); error: failed mid-way. */
      status: "waiting" | "streaming" | "done" | "stopped" | "error";
      /** The generation ended at the token limit. */
      truncated?: boolean;
      /** Replaced by /retry: still shown, no longer part of the conversation. */
      discarded?: boolean;
      error?: string;
    }
  | { kind: "notice"; id: number; text: string; tone: "info" | "error" };

/** A conversation as saved by `/save` and read by `--load`. */
export interface SavedConversation {
  model: string;
  system?: string;
  messages: Array<{ role: "user" | "assistant"; content: string }>;
}

/** The turns that go to the model: user turns and replies that produced text (stopped ones keep their part). */
export function toRequestMessages(entries: Entry[]): Message[] {
  return toSavedMessages(entries).map(({ role, content }) => ({ role, parts: [{ type: "text", text: content }] }));
}

/** The conversation in the saved (Anthropic Messages) shape. */
export function toSavedConversation(model: string, system: string | undefined, entries: Entry[]): SavedConversation {
  return { model, ...(system ? { system } : {}), messages: toSavedMessages(entries) };
}

function toSavedMessages(entries: Entry[]): SavedConversation["messages"] {
  const messages: SavedConversation["messages"] = [];
  for (const entry of entries) {
    if (entry.kind === "user") messages.push({ role: "user", content: entry.text });
    const kept = entry.kind === "assistant" && !entry.discarded && (entry.status === "done" || entry.status === "stopped") && entry.text !== "";
    if (kept) messages.push({ role: "assistant", content: entry.text });
  }
  return messages;
}

/**
 * Reads a saved conversation (string content or arrays of text blocks, as Anthropic allows). Throws an Error
 * naming the offending field when the shape is wrong.
 */
export function parseSavedConversation(json: unknown): SavedConversation {
  if (!isObject(json) || !Array.isArray(json.messages)) throw new Error("expected an object with a messages array");
  const model = typeof json.model === "string" ? json.model : "";
  const system = readContent(json.system, "system");
  const messages = json.messages.map((message: unknown, index: number) => {
    const role = isObject(message) ? message.role : undefined;
    if (role !== "user" && role !== "assistant") throw new Error(`messages.${index}.role must be "user" or "assistant"`);
    const content = readContent((message as Record<string, unknown>).content, `messages.${index}.content`);
    if (content === undefined) throw new Error(`messages.${index}.content is missing`);
    return { role, content } as const;
  });
  return { model, ...(system ? { system } : {}), messages };
}

/** Transcript entries for a loaded conversation, numbered from `firstId`. */
export function toEntries(saved: SavedConversation, firstId: number): Entry[] {
  return saved.messages.map((message, offset) =>
    message.role === "user"
      ? { kind: "user", id: firstId + offset, text: message.content }
      : { kind: "assistant", id: firstId + offset, text: message.content, reasoning: "", status: "done" },
  );
}

function readContent(content: unknown, path: string): string | undefined {
  if (content === undefined || content === null) return undefined;
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) throw new Error(`${path} must be a string or an array of text blocks`);
  return content
    .map((block: unknown, index: number) => {
      if (isObject(block) && block.type === "text" && typeof block.text === "string") return block.text;
      throw new Error(`${path}.${index} must be a text block`);
    })
    .join("");
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
