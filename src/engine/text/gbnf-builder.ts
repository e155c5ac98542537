/**
 * Compiles the JSON Schema subset clients send (OpenAI structured outputs, tool input schemas) into llama.cpp
 * GBNF rules. Whitespace between tokens is at most one space or newline and strings exclude raw control
 * characters, so a small model cannot wander off in padding. Unknown keywords are ignored.
 */
import { EngineError } from "../../errors/engine-error.js";

type Schema = Record<string, unknown>;

/** Rules every grammar shares; the names are reserved. */
const PRIMITIVES: Record<string, string> = {
  ws: "[ \\n]?",
  char: '[^"\\\\\\x00-\\x1F] | "\\\\" (["\\\\/bfnrt] | "u" [0-9a-fA-F]{4})',
  string: '"\\"" char* "\\""',
  integer: '"-"? ("0" | [1-9] [0-9]{0,15})',
  number: 'integer ("." [0-9]{1,16})? ([eE] [-+]? [0-9]{1,3})?',
  boolean: '"true" | "false"',
  null: '"null"',
  value: "object | array | string | number | boolean | null",
  object: '"{" ws (string ws ":" ws value (ws "," ws string ws ":" ws value)* ws)? "}"',
  array: '"[" ws (value (ws "," ws value)* ws)? "]"',
};

/** A GBNF string literal matching `text` exactly. */
export function toGbnfLiteral(text: string): string {
  const escaped = text.replace(/[\\"]/g, (char) => `\\${char}`).replace(/\n/g, "\\n").replace(/\r/g, "\\r").replace(/\t/g, "\\t");
  return `"${escaped}"`;
}

/** Builds one grammar from any number of schemas; `toGrammar` writes it with a `root` rule. */
export class GbnfBuilder {
  private readonly rules = new Map<string, string>();
  private readonly names = new Map<string, string>();
  private readonly refs = new Map<string, string>();
  private document: Schema = {};
  private documentId = 0;

  /** Adds a schema (the document its `$ref`s resolve in); returns the expression matching it. */
  addSchema(schema: unknown, hint: string): string {
    this.document = isSchema(schema) ? schema : {};
    this.documentId++;
    return this.visit(schema, hint);
  }

  /** Adds a named rule (reusing an identical one); returns its name. */
  addRule(hint: string, body: string): string {
    const existing = this.names.get(body);
    if (existing) return existing;
    const name = this.reserveName(hint);
    this.rules.set(name, body);
    this.names.set(body, name);
    return name;
  }

  /** The whole grammar: `root ::= rootExpression`, the schema rules, the primitives. */
  toGrammar(rootExpression: string): string {
    const lines = [`root ::= ${rootExpression}`];
    for (const [name, body] of this.rules) lines.push(`${name} ::= ${body}`);
    for (const [name, body] of Object.entries(PRIMITIVES)) lines.push(`${name} ::= ${body}`);
    return `${lines.join("\n")}\n`;
  }

  private reserveName(hint: string): string {
    const base = hint.replace(/[^a-zA-Z0-9]+/g, "-").replace(/^-+|-+$/g, "").toLowerCase() || "rule";
    let name = base;
    for (let i = 2; this.rules.has(name) || name in PRIMITIVES || name === "root"; i++) name = `${base}-${i}`;
    this.rules.set(name, "");
    return name;
  }

  private visit(schema: unknown, hint: string): string {
    if (!isSchema(schema)) return "value";
    if (typeof schema.$ref === "string") return this.visitRef(schema.$ref);
    if (Array.isArray(schema.allOf)) return this.visit(mergeAllOf(schema), hint);
    if (schema.nullable === true) return this.alternatives(hint, [this.visit({ ...schema, nullable: false }, hint), "null"]);
    if ("const" in schema) return toGbnfLiteral(JSON.stringify(schema.const));
    if (Array.isArray(schema.enum)) return this.alternatives(hint, schema.enum.map((item) => toGbnfLiteral(JSON.stringify(item))));
    const variants = Array.isArray(schema.anyOf) ? schema.anyOf : Array.isArray(schema.oneOf) ? schema.oneOf : undefined;
    if (variants) return this.alternatives(hint, variants.map((variant, i) => this.visit(variant, `${hint}-${i}`)));
    if (Array.isArray(schema.type)) {
      return this.alternatives(hint, schema.type.map((type) => this.visit({ ...schema, type }, `${hint}-${String(type)}`)));
    }
    return this.visitTyped(schema, hint);
  }

  private visitTyped(schema: Schema, hint: string): string {
    const type = schema.type;
    if (type === "object" || (type === undefined && (isSchema(schema.properties) || isSchema(schema.additionalProperties)))) {
      return this.visitObject(schema, hint);
    }
    if (type === "array" || (type === undefined && ("items" in schema || "prefixItems" in schema))) return this.visitArray(schema, hint);
    if (type === "string") return this.visitString(schema, hint);
    if (type === "integer" || type === "number" || type === "boolean" || type === "null") return type;
    return "value";
  }

  private visitRef(ref: string): string {
    const key = `${this.documentId}:${ref}`;
    const known = this.refs.get(key);
    if (known) return known;
    const path = /^#\/(\$defs|definitions)\/(.+)$/.exec(ref);
    const defName = path ? decodePointer(path[2]!, ref) : undefined;
    const target = path ? (this.document[path[1]!] as Schema | undefined)?.[defName!] : ref === "#" ? this.document : undefined;
    // Reserve the name first: recursive schemas refer to themselves.
    const name = this.reserveName(defName ?? "ref");
    this.refs.set(key, name);
    this.rules.set(name, this.visit(target, `${name}-body`));
    return name;
  }

  private visitObject(schema: Schema, hint: string): string {
    const properties = isSchema(schema.properties) ? schema.properties : {};
    const keys = Object.keys(properties);
    if (keys.length === 0) return isSchema(schema.additionalProperties) ? this.visitMap(schema.additionalProperties, hint) : "object";
    const required = new Set(Array.isArray(schema.required) ? schema.required : []);
    const pair = (key: string) =>
      this.addRule(`${hint}-${key}-kv`, `${toGbnfLiteral(JSON.stringify(key))} ws ":" ws ${this.visit(properties[key], `${hint}-${key}`)}`);
    const requiredPairs = keys.filter((key) => required.has(key)).map(pair);
    const optionalPairs = keys.filter((key) => !required.has(key)).map(pair);
    const optionalAfter = (pairs: string[]) => pairs.map((p) => `(ws "," ws ${p})?`).join(" ");
    if (requiredPairs.length > 0) {
      const body = [requiredPairs.join(' ws "," ws '), optionalAfter(optionalPairs)].filter(Boolean).join(" ");
      return this.addRule(hint, `"{" ws ${body} ws "}"`);
    }
    // No required keys: any in-order subset; the first present one carries no comma.
    const firsts = optionalPairs.map((p, i) => [p, optionalAfter(optionalPairs.slice(i + 1))].filter(Boolean).join(" "));
    return this.addRule(hint, `"{" ws ((${firsts.join(" | ")}) ws)? "}"`);
  }

  private visitMap(valueSchema: Schema, hint: string): string {
    const value = this.visit(valueSchema, `${hint}-value`);
    const pair = `string ws ":" ws ${value}`;
    return this.addRule(hint, `"{" ws (${pair} (ws "," ws ${pair})* ws)? "}"`);
  }

  private visitArray(schema: Schema, hint: string): string {
    const item = schema.items === false ? undefined : this.visit(schema.items ?? true, `${hint}-item`);
    if (Array.isArray(schema.prefixItems) && schema.prefixItems.length > 0) {
      const fixed = schema.prefixItems.map((prefix, i) => this.visit(prefix, `${hint}-${i}`)).join(' ws "," ws ');
      const more = item && schema.items !== undefined ? ` (ws "," ws ${item})*` : "";
      return this.addRule(hint, `"[" ws ${fixed}${more} ws "]"`);
    }
    const min = toCount(schema.minItems) ?? 0;
    const max = toCount(schema.maxItems);
    if (max === 0 || !item) return this.addRule(hint, '"[" ws "]"');
    const rest = repeat(`(ws "," ws ${item})`, Math.max(min - 1, 0), max === undefined ? undefined : max - 1);
    const items = rest ? `${item} ${rest}` : item;
    return this.addRule(hint, min > 0 ? `"[" ws ${items} ws "]"` : `"[" ws (${items} ws)? "]"`);
  }

  private visitString(schema: Schema, hint: string): string {
    const min = toCount(schema.minLength) ?? 0;
    const max = toCount(schema.maxLength);
    if (min === 0 && max === undefined) return "string";
    return this.addRule(hint, `"\\"" ${repeat("char", min, max) || '""'} "\\""`);
  }

  private alternatives(hint: string, options: string[]): string {
    const unique = [...new Set(options)];
    return unique.length === 1 ? unique[0]! : this.addRule(hint, unique.join(" | "));
  }
}

/** `item` repeated between `min` and `max` (unbounded when undefined) times, in GBNF. */
function repeat(item: string, min: number, max: number | undefined): string {
  if (max === 0) return "";
  if (min === 0 && max === undefined) return `${item}*`;
  if (min === 0 && max === 1) return `${item}?`;
  if (min === 1 && max === undefined) return `${item}+`;
  return `${item}{${min},${max ?? ""}}`;
}

/** allOf as one schema: object parts merged (properties joined, required united), other keywords overlaid. */
function mergeAllOf(schema: Schema): Schema {
  const { allOf, ...rest } = schema;
  const merged: Schema = { ...rest };
  for (const part of [rest, ...(allOf as unknown[])].filter(isSchema)) {
    const base = { ...merged };
    Object.assign(merged, part);
    if (isSchema(base.properties) || isSchema(part.properties)) merged.properties = { ...(base.properties as Schema), ...(part.properties as Schema) };
    const required = [...asArray(base.required), ...asArray(part.required)];
    if (required.length > 0) merged.required = [...new Set(required)];
  }
  return merged;
}

/** A JSON-pointer segment of a `$ref`; a malformed percent-escape is the client's error, not ours. */
function decodePointer(segment: string, ref: string): string {
  try {
    return decodeURIComponent(segment).replace(/~1/g, "/").replace(/~0/g, "~");
  } catch {
    throw new EngineError("invalid_request", `$ref "${ref}" is not a valid JSON pointer (malformed percent-escape)`, { param: "$ref" });
  }
}

function toCount(value: unknown): number | undefined {
  return typeof value === "number" && Number.isInteger(value) && value >= 0 ? value : undefined;
}

function asArray(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

function isSchema(value: unknown): value is Schema {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
