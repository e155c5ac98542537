/**
 * JSON helpers for reading tool calls out of model text: finding where a JSON value ends in a stream, turning a
 * `{"name", "arguments"}` object into a call, and salvaging arguments cut off by the token limit.
 */
import { parseBoundedJson } from "../../lib/json-depth.js";

/** Tracks nesting across chunks to find where a JSON object or array that started at the first fed char ends. */
export class JsonScanner {
  private inString = false;
  private escaped = false;
  private closers: string[] = [];

  /** Feeds text; returns the index just past the value's end within `text`, or -1 when it has not ended yet. */
  feed(text: string): number {
    for (let i = 0; i < text.length; i++) {
      const char = text[i]!;
      if (this.inString) {
        if (this.escaped) this.escaped = false;
        else if (char === "\\") this.escaped = true;
        else if (char === '"') this.inString = false;
        continue;
      }
      if (char === '"') this.inString = true;
      else if (char === "{" || char === "[") this.closers.push(char === "{" ? "}" : "]");
      else if (char === "}" || char === "]") this.closers.pop();
      if (this.closers.length === 0 && (char === "}" || char === "]")) return i + 1;
    }
    return -1;
  }

  /** What would close the value as it stands: a quote if inside a string, then the open containers. */
  pendingClosers(): string {
    return (this.inString ? '"' : "") + [...this.closers].reverse().join("");
  }
}

/** Where the JSON object starting at `text[0]` ends (index past it), or -1 when incomplete. */
export function findObjectEnd(text: string): number {
  return new JsonScanner().feed(text);
}

/** A tool call read from a JSON object: `{"name": …, "arguments" | "parameters": {…}}` with an offered name. */
export function parseCallObject(json: string, toolNames: ReadonlySet<string>): { name: string; input: Record<string, unknown> } | undefined {
  const value = tryParse(json.trim());
  if (!isRecord(value) || typeof value.name !== "string" || !toolNames.has(value.name)) return undefined;
  const extraKeys = Object.keys(value).filter((key) => !["name", "arguments", "parameters", "id", "type"].includes(key));
  if (extraKeys.length > 0) return undefined;
  // Some models double-encode the arguments as a JSON string.
  const raw = value.arguments ?? value.parameters ?? {};
  const input = typeof raw === "string" ? tryParse(raw) : raw;
  return isRecord(input) ? { name: value.name, input } : undefined;
}

/**
 * Arguments that ended early (token limit) or came out malformed: closes what is open and drops a dangling
 * comma or key so the client gets what was written; `{}` when nothing can be recovered.
 */
export function salvageArguments(json: string): Record<string, unknown> {
  const scanner = new JsonScanner();
  scanner.feed(json);
  const closers = scanner.pendingClosers();
  const trimmed = json.replace(/,\s*$/, "");
  const candidates = [json, json + closers, trimmed + closers.replace(/^"/, ""), trimmed.replace(/,?\s*"[^"]*"\s*:?\s*$/, "") + closers.replace(/^"/, "")];
  for (const candidate of candidates) {
    const value = tryParse(candidate);
    if (isRecord(value)) return value;
  }
  return {};
}

/** Model output nested beyond the JSON limit counts as malformed, like any text that does not parse. */
function tryParse(text: string): unknown {
  try {
    return parseBoundedJson(text);
  } catch {
    return undefined;
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
