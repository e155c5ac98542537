import { describe, expect, it } from "vitest";
import { ToolCallParser, type ParsedPiece } from "./tool-call-parser.js";

const toolNames = ["get_weather", "search"];

/** Parses `chunks`, checks each call's deltas concatenate to JSON of its input, and merges text pieces. */
function parse(chunks: string[], parallel?: boolean): Array<{ text: string } | { name: string; input: unknown }> {
  const parser = new ToolCallParser({ toolNames, parallel });
  const pieces: ParsedPiece[] = chunks.flatMap((chunk) => parser.push(chunk));
  pieces.push(...parser.end());
  const result: Array<{ text: string } | { name: string; input: unknown }> = [];
  let call: { name: string; json: string } | undefined;
  for (const piece of pieces) {
    if (piece.kind === "text") {
      expect(call).toBeUndefined();
      const last = result.at(-1);
      if (last && "text" in last) last.text += piece.text;
      else result.push({ text: piece.text });
    } else if (piece.kind === "call-start") call = { name: piece.name, json: "" };
    else if (piece.kind === "call-delta") call!.json += piece.json;
    else {
      expect(JSON.parse(call!.json)).toEqual(piece.input);
      result.push({ name: call!.name, input: piece.input });
      call = undefined;
    }
  }
  expect(call).toBeUndefined();
  return result;
}

/** The text in one chunk, one character per chunk, and cut in two at every position. */
function splits(text: string): string[][] {
  const all = [[text], [...text]];
  for (let i = 1; i < text.length; i++) all.push([text.slice(0, i), text.slice(i)]);
  return all;
}

function expectEverySplit(text: string, expected: unknown, parallel?: boolean): void {
  for (const chunks of splits(text)) expect(parse(chunks, parallel), JSON.stringify(chunks)).toEqual(expected);
}

const paris = { name: "get_weather", input: { city: "Paris", days: [1, 2], note: "a } \" { b" } };
const parisCall = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "days": [1, 2], "note": "a } \\" { b"}}\n</tool_call>';

describe("ToolCallParser", () => {
  it("passes plain text through", () => {
    expectEverySplit("Hello <b>world</b> a < b", [{ text: "Hello <b>world</b> a < b" }]);
  });

  it("separates text and a tagged call at every split", () => {
    expectEverySplit(`Let me check.\n${parisCall}`, [{ text: "Let me check." }, paris]);
  });

  it("parses parallel calls, dropping whitespace between them, and text after them", () => {
    const search = '<tool_call>{"name":"search","parameters":{"q":"x"}}</tool_call>';
    expectEverySplit(`${parisCall}\n\n${search}\nDone.`, [paris, { name: "search", input: { q: "x" } }, { text: "Done." }]);
  });

  it("drops everything after the first call without parallel calls", () => {
    expectEverySplit(`${parisCall}\n<tool_call>{"name":"search","arguments":{}}</tool_call> more`, [paris], false);
  });

  it("accepts a bare JSON call as the whole reply", () => {
    expectEverySplit('  {"name": "search", "arguments": {"q": "kiln"}}\n', [{ name: "search", input: { q: "kiln" } }]);
  });

  it("accepts a fenced JSON call", () => {
    expectEverySplit('```json\n{"name": "search", "arguments": {"q": "kiln"}}\n```', [{ name: "search", input: { q: "kiln" } }]);
    expectEverySplit('```\n{"name": "search", "parameters": "{\\"q\\": \\"k\\"}"}\n```', [{ name: "search", input: { q: "k" } }]);
  });

  it("keeps JSON that is not a call, and other fences, as text", () => {
    expectEverySplit('{"answer": 42}', [{ text: '{"answer": 42}' }]);
    expectEverySplit("```python\nprint(1)\n```", [{ text: "```python\nprint(1)\n```" }]);
    expectEverySplit('Sure: {"name": "search", "arguments": {}}', [{ text: 'Sure: {"name": "search", "arguments": {}}' }]);
  });

  it("returns an unknown tool or unparsable call as raw text", () => {
    const unknown = '<tool_call>{"name": "rm_rf", "arguments": {"path": "/"}}</tool_call>';
    expectEverySplit(`a ${unknown} b`, [{ text: `a ${unknown} b` }]);
    const broken = "<tool_call>{name: search}</tool_call>";
    expectEverySplit(broken, [{ text: broken }]);
  });

  it("reads a call whose keys come in another order once it closes", () => {
    expectEverySplit('<tool_call>{"arguments": {"q": 1}, "name": "search"}</tool_call>', [{ name: "search", input: { q: 1 } }]);
  });

  it("gives back a partial opener at the end as text", () => {
    expectEverySplit("See <tool_ca", [{ text: "See <tool_ca" }]);
    expectEverySplit("x <tool_call>", [{ text: "x <tool_call>" }]);
  });

  it("ends a call cut off mid-arguments with what was written", () => {
    const parser = new ToolCallParser({ toolNames });
    const pieces = [...parser.push('<tool_call>{"name": "search", "arguments": {"q": "ki'), ...parser.end()];
    expect(pieces).toEqual([
      { kind: "call-start", name: "search" },
      { kind: "call-delta", json: '{"q": "ki' },
      { kind: "call-end", input: { q: "ki" } },
    ]);
  });

  it("emits call-start as soon as the name and arguments begin", () => {
    const parser = new ToolCallParser({ toolNames });
    expect(parser.push('<tool_call>{"name": "search", "arguments": ')).toEqual([]);
    expect(parser.push('{"q"')).toEqual([{ kind: "call-start", name: "search" }, { kind: "call-delta", json: '{"q"' }]);
  });

  it("holds trailing whitespace of text until more text follows", () => {
    const parser = new ToolCallParser({ toolNames });
    expect(parser.push("Hi \n")).toEqual([{ kind: "text", text: "Hi" }]);
    expect(parser.push("there")).toEqual([{ kind: "text", text: " \nthere" }]);
    expect(parser.push("\n")).toEqual([]);
    expect(parser.end()).toEqual([{ kind: "text", text: "\n" }]);
  });
});
