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
      { kind: "call-end", input: { q: "ki" }, cut: true },
    ]);
  });

  it("ends a call cut off after its name, before the arguments, as a cut call rather than text", () => {
    const parser = new ToolCallParser({ toolNames });
    expect([...parser.push('<tool_call>\n{"name": "search"'), ...parser.end()]).toEqual([
      { kind: "call-start", name: "search" },
      { kind: "call-end", input: {}, cut: true },
    ]);
    const unknown = new ToolCallParser({ toolNames });
    expect([...unknown.push('<tool_call>\n{"name": "other"'), ...unknown.end()]).toEqual([{ kind: "text", text: '<tool_call>\n{"name": "other"' }]);
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

describe("ToolCallParser with the offered tools' parameters", () => {
  // Claude Code's file tools, reduced to their parameter names.
  const shapes = [
    { name: "Write", properties: ["file_path", "content"], required: ["file_path", "content"] },
    { name: "Edit", properties: ["file_path", "old_string", "new_string", "replace_all"], required: ["file_path", "old_string", "new_string"] },
    { name: "Read", properties: ["file_path", "offset", "limit"], required: ["file_path"] },
    { name: "Open", properties: ["file_path"], required: ["file_path"] },
  ];
  const parseWith = (text: string) => {
    const parser = new ToolCallParser({ toolNames: shapes.map((shape) => shape.name), shapes });
    return [...parser.push(text), ...parser.end()];
  };

  it("takes a misnamed call as the one offered tool its arguments fit (as Qwen2.5-Coder-0.5B wrote it for Claude Code)", () => {
    const reply = '```json\n{\n  "name": "create hello.py",\n  "arguments": {\n    "file_path": "/tmp/t/hello.py",\n    "content": "print(\'hello\')"\n  }\n}\n```';
    const pieces = parseWith(reply);
    expect(pieces.filter((piece) => piece.kind !== "call-delta")).toEqual([
      { kind: "call-start", name: "Write" },
      { kind: "call-end", input: { file_path: "/tmp/t/hello.py", content: "print('hello')" } },
    ]);
  });

  it("takes a bare arguments object as the one offered tool it fits", () => {
    const reply = '{"file_path":"/tmp/t/hello.py","content":"print(\'hello\')"}';
    expect(parseWith(reply).filter((piece) => piece.kind !== "call-delta")).toEqual([
      { kind: "call-start", name: "Write" },
      { kind: "call-end", input: { file_path: "/tmp/t/hello.py", content: "print('hello')" } },
    ]);
  });

  it("keeps a bare object as text when it fits several tools or none", () => {
    for (const reply of ['{"file_path": "a.py"}', '{"answer": 42}']) expect(parseWith(reply)).toEqual([{ kind: "text", text: reply }]);
  });

  it("keeps a misnamed call as text when its arguments fit several tools (Read and Open), none, or are empty", () => {
    for (const args of ['{"file_path": "a.py"}', '{"path": "a.py", "content": "x"}', "{}"]) {
      const reply = `<tool_call>{"name": "do it", "arguments": ${args}}</tool_call>`;
      expect(parseWith(reply)).toEqual([{ kind: "text", text: reply }]);
    }
  });
});
