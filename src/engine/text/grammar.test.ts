import { describe, expect, it } from "vitest";
import type { ToolSpec } from "../messages.js";
import { compileGbnf } from "./gbnf-matcher.fixture.js";
import { jsonSchemaToGbnf, responseFormatGrammar, toolCallGrammar } from "./grammar.js";

/** Compiles the schema's grammar; `ok`/`bad` take values (JSON-encoded compactly) or raw strings. */
function grammarFor(schema: Record<string, unknown>) {
  const { accepts, rules } = compileGbnf(jsonSchemaToGbnf(schema));
  const text = (value: unknown) => (typeof value === "string" ? value : JSON.stringify(value));
  return {
    rules,
    ok: (...values: unknown[]) => values.forEach((value) => expect(accepts(text(value)), text(value)).toBe(true)),
    bad: (...values: unknown[]) => values.forEach((value) => expect(accepts(text(value)), text(value)).toBe(false)),
  };
}

describe("jsonSchemaToGbnf", () => {
  it("puts required properties first in schema order and lets optional ones be left out", () => {
    const g = grammarFor({
      type: "object",
      properties: { b: { type: "integer" }, a: { type: "string" }, c: { type: "boolean" }, d: { type: "null" } },
      required: ["c", "a"],
    });
    g.ok({ a: "x", c: true }, { a: "x", c: false, b: 1 }, { a: "", c: true, b: -2, d: null }, { a: "x", c: true, d: null });
    g.bad({ c: true, a: "x" }, { a: "x" }, { a: "x", c: true, e: 1 }, { a: "x", c: true, d: null, b: 1 }, { a: 1, c: true });
  });

  it("allows any in-order subset when nothing is required, and the empty object", () => {
    const g = grammarFor({ type: "object", properties: { x: { type: "integer" }, y: { type: "integer" } } });
    g.ok({}, { x: 1 }, { y: 2 }, { x: 1, y: 2 });
    g.bad({ y: 2, x: 1 }, "{,}", '{"x": 1,}');
  });

  it("emits only declared properties whatever additionalProperties says, and maps without properties", () => {
    for (const additionalProperties of [true, false, undefined, { type: "string" }]) {
      grammarFor({ type: "object", properties: { x: { type: "integer" } }, additionalProperties }).bad({ x: 1, y: 2 });
    }
    const map = grammarFor({ type: "object", additionalProperties: { type: "integer" } });
    map.ok({}, { any: 1, key: 2 });
    map.bad({ any: "1" });
    grammarFor({ type: "object" }).ok({ a: [1, { b: null }], c: "d" });
  });

  it("bounds whitespace to one space or newline between tokens", () => {
    const g = grammarFor({ type: "object", properties: { a: { type: "array", items: { type: "integer" } } }, required: ["a"] });
    g.ok('{"a":[1,2]}', '{ "a": [ 1, 2 ] }', '{\n"a" :\n[1,\n2]\n}');
    g.bad('{  "a": []}', '{"a":  []}', '{"a": [1 ,  2]}', '{\t"a": []}', ' {"a": []}');
  });

  it("keeps strings free of raw control characters and honours length bounds", () => {
    const g = grammarFor({ type: "object", properties: { s: { type: "string", minLength: 2, maxLength: 3 } }, required: ["s"] });
    g.ok({ s: "ab" }, { s: "a\"c" }, { s: "é\\n" }, '{"s": "\\u00e9x"}');
    g.bad({ s: "a" }, { s: "abcd" }, '{"s": "a\nb"}', '{"s": "a\\qb"}');
  });

  it("supports type arrays, nullable, enum and const with escaping", () => {
    grammarFor({ type: ["string", "null"] }).ok("null", '"x"');
    grammarFor({ type: ["string", "null"] }).bad("1");
    grammarFor({ type: "integer", nullable: true }).ok("null", "-12");
    grammarFor({ type: "integer" }).bad("1.5", "01");
    grammarFor({ type: "number" }).ok("1.5", "-0.25e3", "7");
    const e = grammarFor({ enum: ['a"b', "x\ny", 3, null, true] });
    e.ok('"a\\"b"', '"x\\ny"', "3", "null", "true");
    e.bad('"ab"', "4", "false");
    grammarFor({ const: { k: [1] } }).ok('{"k":[1]}');
  });

  it("supports anyOf, oneOf and allOf merging objects", () => {
    grammarFor({ anyOf: [{ type: "integer" }, { type: "boolean" }] }).ok("1", "false");
    grammarFor({ oneOf: [{ type: "integer" }, { type: "boolean" }] }).bad('"1"');
    const all = grammarFor({
      allOf: [
        { type: "object", properties: { a: { type: "integer" } }, required: ["a"] },
        { properties: { b: { type: "string" } }, required: ["b"] },
      ],
    });
    all.ok({ a: 1, b: "x" });
    all.bad({ a: 1 }, { b: "x" });
  });

  it("resolves $ref to $defs and definitions, recursively", () => {
    const g = grammarFor({
      $defs: { node: { type: "object", properties: { v: { type: "integer" }, next: { anyOf: [{ $ref: "#/$defs/node" }, { type: "null" }] } }, required: ["v", "next"] } },
      definitions: { tag: { enum: ["x"] } },
      type: "object",
      properties: { head: { $ref: "#/$defs/node" }, tag: { $ref: "#/definitions/tag" } },
      required: ["head", "tag"],
    });
    g.ok({ head: { v: 1, next: { v: 2, next: null } }, tag: "x" });
    g.bad({ head: { v: 1, next: { v: 2 } }, tag: "x" }, { head: { v: 1, next: null }, tag: "y" });
  });

  it("supports items, prefixItems, minItems and maxItems", () => {
    const bounded = grammarFor({ type: "array", items: { type: "integer" }, minItems: 1, maxItems: 3 });
    bounded.ok([1], [1, 2, 3]);
    bounded.bad([], [1, 2, 3, 4], ["1"]);
    grammarFor({ type: "array", maxItems: 0 }).bad([1]);
    const tuple = grammarFor({ type: "array", prefixItems: [{ type: "string" }, { type: "integer" }], items: { type: "boolean" } });
    tuple.ok(["a", 1], ["a", 1, true, false]);
    tuple.bad([1, "a"], ["a", 1, 2]);
  });

  it("ignores keywords it does not implement", () => {
    const plain = { type: "object", properties: { a: { type: "string" } }, required: ["a"], additionalProperties: false };
    const decorated = {
      $schema: "http://json-schema.org/draft-07/schema#",
      title: "T",
      description: "D",
      examples: [{ a: "x" }],
      propertyNames: { pattern: "^a$" },
      ...plain,
      properties: { a: { type: "string", pattern: "^x+$", format: "date-time", description: "d" } },
    };
    expect(jsonSchemaToGbnf(decorated)).toBe(jsonSchemaToGbnf(plain));
  });

  it("sanitises property names into unique rule names that never shadow the built-in rules", () => {
    const schema = {
      type: "object",
      properties: { "foo bar": { type: "object", properties: { x: { type: "integer" } } }, foo_bar: { type: "object", properties: { x: { type: "boolean" } } }, string: { type: "object", properties: { s: { type: "null" } } } },
      required: ["foo bar", "foo_bar", "string"],
    };
    const g = grammarFor(schema);
    expect([...g.rules.keys()].every((name) => /^[a-z0-9-]+$/.test(name))).toBe(true);
    g.ok({ "foo bar": { x: 1 }, foo_bar: { x: true }, string: { s: null } });
    g.bad({ "foo bar": { x: true }, foo_bar: { x: 1 }, string: { s: null } }, { "foo bar": {}, foo_bar: {}, string: "x" });
  });
});

const tools: ToolSpec[] = [
  { name: "get_weather", inputSchema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } },
  { name: "Bash", inputSchema: { $schema: "http://json-schema.org/draft-07/schema#", type: "object", properties: { command: { type: "string" } }, required: ["command"], additionalProperties: false } },
  { name: "ping", inputSchema: {} },
];
const call = (name: string, args: unknown) => `<tool_call>\n{"name": "${name}", "arguments": ${JSON.stringify(args)}}\n</tool_call>`;

describe("toolCallGrammar", () => {
  it("is absent for auto and none", () => {
    expect(toolCallGrammar(tools, { type: "auto" })).toBeUndefined();
    expect(toolCallGrammar(tools, { type: "none" })).toBeUndefined();
  });

  it("forces exactly one call of any tool with valid arguments for required", () => {
    const { accepts } = compileGbnf(toolCallGrammar(tools, { type: "required" })!);
    expect(accepts(call("get_weather", { city: "Paris" }))).toBe(true);
    expect(accepts(call("Bash", { command: "ls" }))).toBe(true);
    expect(accepts(call("ping", {}))).toBe(true);
    expect(accepts(call("Bash", { city: "Paris" }))).toBe(false);
    expect(accepts(call("other", {}))).toBe(false);
    expect(accepts(call("ping", []))).toBe(false);
    expect(accepts(call("ping", {}) + call("ping", {}))).toBe(false);
    expect(accepts(`Sure. ${call("ping", {})}`)).toBe(false);
  });

  it("forces the named tool only, and refuses a name that was not offered", () => {
    const { accepts } = compileGbnf(toolCallGrammar(tools, { type: "tool", name: "Bash" })!);
    expect(accepts(call("Bash", { command: "ls" }))).toBe(true);
    expect(accepts(call("get_weather", { city: "Paris" }))).toBe(false);
    expect(() => toolCallGrammar(tools, { type: "tool", name: "nope" })).toThrow(expect.objectContaining({ code: "invalid_request" }));
  });
});

describe("responseFormatGrammar", () => {
  it("is absent for text, any object for json, the schema for json-schema", () => {
    expect(responseFormatGrammar({ type: "text" })).toBeUndefined();
    const json = compileGbnf(responseFormatGrammar({ type: "json" })!);
    expect(json.accepts('{"a": [1, {"b": null}]}')).toBe(true);
    expect(json.accepts("[1]")).toBe(false);
    const schema = { type: "object", properties: { n: { type: "integer" } }, required: ["n"] };
    expect(responseFormatGrammar({ type: "json-schema", schema })).toBe(jsonSchemaToGbnf(schema));
  });
});
