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

/** An offered tool's parameter names, from its input schema: every property, and the required ones. */
export interface ToolShape { name: string; properties: string[]; required: string[] }

/** The shape of a tool from its JSON schema's top-level `properties` and `required`. */
export function toToolShape(name: string, schema: Record<string, unknown>): ToolShape {
  const properties = isRecord(schema.properties) ? Object.keys(schema.properties) : [];
  const required = Array.isArray(schema.required) ? schema.required.filter((key): key is string => typeof key === "string") : [];
  return { name, properties, required };
}

/**
 * A tool call read from a JSON object: `{"name": …, "arguments" | "parameters": {…}}` naming an offered tool. Small
 * models sometimes name a call after what it does ("create hello.py") while writing exactly an offered tool's
 * arguments, or write the arguments alone: such a call is that tool's when it is the only offered tool the arguments
 * fit (see fitsOneTool).
 */
export function parseCallObject(json: string, toolNames: ReadonlySet<string>, shapes: readonly ToolShape[] = []): { name: string; input: Record<string, unknown> } | undefined {
  const value = tryParse(json.trim());
  if (!isRecord(value)) return undefined;
  // Some write just the arguments, without a name: a call of the one tool they fit, like a misnamed call.
  if (!("name" in value) && !("arguments" in value) && !("parameters" in value)) {
    const name = fitsOneTool(value, shapes);
    return name === undefined ? undefined : { name, input: value };
  }
  if (typeof value.name !== "string") return undefined;
  const extraKeys = Object.keys(value).filter((key) => !["name", "arguments", "parameters", "id", "type"].includes(key));
  if (extraKeys.length > 0) return undefined;
  // Some models double-encode the arguments as a JSON string.
  const raw = value.arguments ?? value.parameters ?? {};
  const input = typeof raw === "string" ? tryParse(raw) : raw;
  if (!isRecord(input)) return undefined;
  const name = toolNames.has(value.name) ? value.name : fitsOneTool(input, shapes);
  return name === undefined ? undefined : { name, input };
}

/**
 * The one offered tool whose parameters the arguments fit: every argument is one of its properties and every
 * required property is given. None (undefined) when no argument is given, or when no tool or several fit.
 */
function fitsOneTool(input: Record<string, unknown>, shapes: readonly ToolShape[]): string | undefined {
  const keys = Object.keys(input);
  if (keys.length === 0) return undefined;
  const fits = shapes.filter((shape) => keys.every((key) => shape.properties.includes(key)) && shape.required.every((key) => key in input));
  return fits.length === 1 ? fits[0]!.name : undefined;
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
