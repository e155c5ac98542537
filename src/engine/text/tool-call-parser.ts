/**
 * Streaming reader of model output that separates text from tool calls written in the convention of
 * tool-prompt.ts (<tool_call>{"name": …, "arguments": …}</tool_call>), plus the variants small models emit: a bare
 * JSON call object, or one in a ```json fence, at the start of the reply or right after another call.
 */
import { JsonScanner, findObjectEnd, parseCallObject, salvageArguments, type ToolShape } from "./tool-call-json.js";

/** One piece of parsed output, in order. `call-delta` fragments concatenate to the arguments JSON. */
export type ParsedPiece =
  | { kind: "text"; text: string }
  | { kind: "call-start"; name: string }
  | { kind: "call-delta"; json: string }
  | { kind: "call-end"; input: unknown; cut?: true };

/**
 * What the parser accepts: the offered tool names (and their parameter names, to recognise a call whose name is
 * off but whose arguments fit one tool); `parallel: false` ends parsing after the first call.
 */
export interface ToolCallParserOptions { toolNames: string[]; shapes?: ToolShape[]; parallel?: boolean }

const OPEN = "<tool_call>";
const CLOSE = "</tool_call>";
const FENCE = "```";
/** `{"name": "…", "arguments": ` up to the first character of the arguments value. */
const HEAD = /^\s*\{\s*"name"\s*:\s*"((?:[^"\\]|\\.)*)"\s*,\s*"(?:arguments|parameters)"\s*:\s*(?=\S)/;
/** `{"name": "…"`: a head cut off after the name. */
const NAMED = /^\s*\{\s*"name"\s*:\s*"((?:[^"\\]|\\.)*)"/;

type Mode = "text" | "head" | "args" | "tail" | "buffered" | "bare" | "done";

/** Splits streamed model text into text and tool-call pieces; chunks may be split anywhere. */
export class ToolCallParser {
  private readonly toolNames: ReadonlySet<string>;
  private readonly shapes: readonly ToolShape[];
  private readonly parallel: boolean;
  private mode: Mode = "text";
  private buffer = "";
  /** Trailing whitespace of the text so far: emitted if more text follows, dropped once a call starts. */
  private heldSpace = "";
  /** At the reply's start or right after a call, where a bare JSON call may begin. */
  private segmentStart = true;
  private calls = 0;
  private scanner = new JsonScanner();
  private args = "";
  private out: ParsedPiece[] = [];

  constructor(options: ToolCallParserOptions) {
    this.toolNames = new Set(options.toolNames);
    this.shapes = options.shapes ?? [];
    this.parallel = options.parallel !== false;
  }

  /** Feeds a chunk of generated text; returns the pieces now certain. */
  push(text: string): ParsedPiece[] {
    this.buffer += text;
    return this.drain(false);
  }

  /** Generation ended: resolves whatever is held back. */
  end(): ParsedPiece[] {
    return this.drain(true);
  }

  private drain(final: boolean): ParsedPiece[] {
    while (this.step(final));
    if (final) this.finish();
    const pieces = this.out;
    this.out = [];
    return pieces;
  }

  /** Advances one state; false when more input is needed. */
  private step(final: boolean): boolean {
    if (this.mode === "done") this.buffer = "";
    if (this.buffer.length === 0) return false;
    switch (this.mode) {
      case "text": return this.segmentStart ? this.stepSegmentStart(final) : this.stepText(final);
      case "head": return this.stepHead(final);
      case "args": return this.stepArgs();
      case "tail": return this.stepTail(final);
      case "buffered": return this.stepBuffered(final);
      case "bare": return this.stepBare(final);
      default: return false;
    }
  }

  /** Decides whether a segment starts a bare/fenced JSON call or plain text. */
  private stepSegmentStart(final: boolean): boolean {
    const rest = this.buffer.trimStart();
    if (rest.length === 0) return final ? this.leaveSegmentStart() : false;
    if (rest.startsWith("{")) return this.enter("bare");
    if (rest.startsWith(FENCE)) {
      const newline = rest.indexOf("\n");
      if (newline < 0) return final ? this.leaveSegmentStart() : false;
      const language = rest.slice(FENCE.length, newline).trim();
      const body = rest.slice(newline + 1).trimStart();
      if ((language === "" || language === "json") && body.length === 0 && !final) return false;
      if ((language === "" || language === "json") && body.startsWith("{")) return this.enter("bare");
      return this.leaveSegmentStart();
    }
    if (FENCE.startsWith(rest) && !final) return false;
    return this.leaveSegmentStart();
  }

  private leaveSegmentStart(): boolean {
    this.segmentStart = false;
    if (this.calls > 0) this.buffer = this.buffer.trimStart();
    return true;
  }

  /** Plain text: emits everything except a possible partial opener at the end. */
  private stepText(final: boolean): boolean {
    const open = this.buffer.indexOf(OPEN);
    if (open >= 0) {
      this.emitText(this.buffer.slice(0, open));
      this.buffer = this.buffer.slice(open + OPEN.length);
      return this.enter("head");
    }
    const keep = final ? 0 : partialSuffix(this.buffer, OPEN);
    this.emitText(this.buffer.slice(0, this.buffer.length - keep));
    this.buffer = this.buffer.slice(this.buffer.length - keep);
    return false;
  }

  /** After the opener: streams once the name of an offered tool and the arguments' `{` are known. */
  private stepHead(final: boolean): boolean {
    const head = HEAD.exec(this.buffer);
    if (head) {
      const name = parseJsonString(head[1]!);
      const opensObject = this.buffer[head[0].length] === "{";
      if (name === undefined || !this.toolNames.has(name) || !opensObject) return this.enter("buffered");
      this.heldSpace = "";
      this.out.push({ kind: "call-start", name });
      this.buffer = this.buffer.slice(head[0].length);
      this.scanner = new JsonScanner();
      this.args = "";
      return this.enter("args");
    }
    if (final && !this.buffer.includes(CLOSE) && this.cutInHead()) return this.enter("text", "");
    return this.buffer.includes(CLOSE) || final ? this.enter("buffered") : false;
  }

  /** The output ended inside a call's head, after the name of an offered tool: a call cut off before its arguments. */
  private cutInHead(): boolean {
    const written = NAMED.exec(this.buffer)?.[1];
    const name = written === undefined ? undefined : parseJsonString(written);
    if (name === undefined || !this.toolNames.has(name)) return false;
    this.heldSpace = "";
    this.out.push({ kind: "call-start", name });
    this.endCall({}, true);
    return true;
  }

  /** Streams the arguments object as deltas until it closes. */
  private stepArgs(): boolean {
    const end = this.scanner.feed(this.buffer);
    const chunk = end < 0 ? this.buffer : this.buffer.slice(0, end);
    this.buffer = this.buffer.slice(chunk.length);
    this.args += chunk;
    if (chunk.length > 0) this.out.push({ kind: "call-delta", json: chunk });
    if (end < 0) return false;
    this.endCall(salvageArguments(this.args));
    return this.enter("tail");
  }

  /** Swallows the call's closing `}` and `</tool_call>`; anything else goes back to text. */
  private stepTail(final: boolean): boolean {
    const match = /^\s*\}?\s*/.exec(this.buffer)![0];
    const rest = this.buffer.slice(match.length);
    if (rest.length === 0) return final ? this.enter("text", "") : false;
    if (rest.startsWith(CLOSE)) return this.enter("text", rest.slice(CLOSE.length));
    if (CLOSE.startsWith(rest) && !final) return false;
    return this.enter("text", rest);
  }

  /** A call that could not be streamed: wait for its closer, then read it whole or give it back as text. */
  private stepBuffered(final: boolean): boolean {
    const close = this.buffer.indexOf(CLOSE);
    if (close < 0 && !final) return false;
    const content = close < 0 ? this.buffer : this.buffer.slice(0, close);
    const raw = OPEN + (close < 0 ? this.buffer : this.buffer.slice(0, close + CLOSE.length));
    const rest = close < 0 ? "" : this.buffer.slice(close + CLOSE.length);
    return this.resolveWhole(content, raw, rest);
  }

  /** A bare or fenced JSON object at a segment start: a call if it reads as one, text otherwise. */
  private stepBare(final: boolean): boolean {
    const start = this.buffer.indexOf("{");
    const end = findObjectEnd(this.buffer.slice(start));
    if (end < 0) return final ? this.resolveWhole("", this.buffer, "") : false;
    let consumed = start + end;
    if (this.buffer.trimStart().startsWith(FENCE)) {
      const after = this.buffer.slice(consumed);
      const fence = /^\s*```/.exec(after);
      if (fence) consumed += fence[0].length;
      else if (!final && FENCE.startsWith(after.trimStart())) return false;
      else if (after.trim().length > 0) return this.resolveWhole("", this.buffer.slice(0, consumed), after);
    }
    return this.resolveWhole(this.buffer.slice(start, start + end), this.buffer.slice(0, consumed), this.buffer.slice(consumed));
  }

  /** Emits a complete call read from `json`, or `raw` as text when it is not a call of an offered tool. */
  private resolveWhole(json: string, raw: string, rest: string): boolean {
    const call = parseCallObject(json, this.toolNames, this.shapes);
    if (!call) {
      this.segmentStart = false;
      this.emitText(raw);
      return this.enter("text", rest, false);
    }
    this.heldSpace = "";
    this.out.push({ kind: "call-start", name: call.name }, { kind: "call-delta", json: JSON.stringify(call.input) });
    this.endCall(call.input);
    return this.enter("text", rest);
  }

  private endCall(input: unknown, cut = false): void {
    this.out.push(cut ? { kind: "call-end", input, cut } : { kind: "call-end", input });
    this.calls++;
  }

  /** Switches mode; entering text after a call starts a new segment (or stops, without parallel calls). */
  private enter(mode: Mode, buffer = this.buffer, segmentStart = true): boolean {
    this.buffer = buffer;
    this.mode = mode === "text" && this.calls > 0 && !this.parallel ? "done" : mode;
    if (mode === "text") this.segmentStart = segmentStart;
    return true;
  }

  /** Emits text, holding back its trailing whitespace. */
  private emitText(text: string): void {
    const combined = this.heldSpace + text;
    const body = combined.trimEnd();
    this.heldSpace = combined.slice(body.length);
    if (body.length > 0) this.out.push({ kind: "text", text: body });
  }

  /** End of output: a call cut off mid-arguments still ends; trailing whitespace survives only without calls. */
  private finish(): void {
    if (this.mode === "args") this.endCall(salvageArguments(this.args), true);
    // The output ended right after an opener: it was text after all.
    if (this.mode === "head" || this.mode === "buffered") this.emitText(OPEN);
    if (this.calls === 0 && this.heldSpace.length > 0) this.out.push({ kind: "text", text: this.heldSpace });
    this.heldSpace = "";
    this.mode = "done";
  }
}

/** Length of the longest suffix of `text` that is a proper prefix of `marker`. */
function partialSuffix(text: string, marker: string): number {
  for (let length = Math.min(marker.length - 1, text.length); length > 0; length--) {
    if (text.endsWith(marker.slice(0, length))) return length;
  }
  return 0;
}

function parseJsonString(body: string): string | undefined {
  try {
    return JSON.parse(`"${body}"`) as string;
  } catch {
    return undefined;
  }
}
