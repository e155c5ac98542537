/**
 * A small GBNF interpreter for tests: decides whether a grammar (as GbnfBuilder writes it, one rule per line)
 * accepts a string, so the grammar's meaning is checked without loading llama.cpp.
 */

type Node =
  | { kind: "literal"; text: string }
  | { kind: "class"; negated: boolean; ranges: Array<[number, number]> }
  | { kind: "rule"; name: string }
  | { kind: "seq"; items: Node[] }
  | { kind: "alt"; options: Node[] }
  | { kind: "repeat"; node: Node; min: number; max: number };

/** Parses the grammar; `accepts(text)` says whether `root` matches the whole text. */
export function compileGbnf(grammar: string): { rules: Map<string, Node>; accepts: (text: string) => boolean } {
  const rules = new Map<string, Node>();
  for (const line of grammar.split("\n").filter((l) => l.trim().length > 0)) {
    const match = /^([a-z0-9-]+) ::= (.*)$/.exec(line);
    if (!match) throw new Error(`bad rule line: ${line}`);
    const parser = new BodyParser(match[2]!);
    rules.set(match[1]!, parser.parseAlt());
    if (!parser.done()) throw new Error(`trailing input in rule ${match[1]}: ${parser.rest()}`);
  }
  const accepts = (text: string) => [...matchNode(rules, rules.get("root")!, [...text], 0)].includes([...text].length);
  return { rules, accepts };
}

function matchNode(rules: Map<string, Node>, node: Node, input: string[], pos: number): Set<number> {
  switch (node.kind) {
    case "literal": {
      const chars = [...node.text];
      return new Set(chars.every((c, i) => input[pos + i] === c) ? [pos + chars.length] : []);
    }
    case "class": {
      const code = input[pos]?.codePointAt(0);
      if (code === undefined) return new Set();
      const inside = node.ranges.some(([lo, hi]) => code >= lo && code <= hi);
      return new Set(inside !== node.negated ? [pos + 1] : []);
    }
    case "rule": {
      const target = rules.get(node.name);
      if (!target) throw new Error(`undefined rule ${node.name}`);
      return matchNode(rules, target, input, pos);
    }
    case "seq":
      return node.items.reduce((ends, item) => new Set([...ends].flatMap((p) => [...matchNode(rules, item, input, p)])), new Set([pos]));
    case "alt":
      return new Set(node.options.flatMap((option) => [...matchNode(rules, option, input, pos)]));
    case "repeat": {
      let frontier = new Set([pos]);
      const ends = new Set<number>(node.min === 0 ? [pos] : []);
      for (let count = 1; count <= node.max && frontier.size > 0; count++) {
        frontier = new Set([...frontier].flatMap((p) => [...matchNode(rules, node.node, input, p)].filter((e) => e > p)));
        if (count >= node.min) frontier.forEach((end) => ends.add(end));
      }
      return ends;
    }
  }
}

class BodyParser {
  private pos = 0;
  constructor(private readonly text: string) {}

  done(): boolean {
    this.skipSpace();
    return this.pos >= this.text.length;
  }

  rest(): string {
    return this.text.slice(this.pos);
  }

  parseAlt(): Node {
    const options = [this.parseSeq()];
    while (this.peek() === "|") {
      this.pos++;
      options.push(this.parseSeq());
    }
    return options.length === 1 ? options[0]! : { kind: "alt", options };
  }

  private parseSeq(): Node {
    const items: Node[] = [];
    for (let char = this.peek(); char !== undefined && char !== "|" && char !== ")"; char = this.peek()) items.push(this.parseQuantified());
    return { kind: "seq", items };
  }

  private parseQuantified(): Node {
    const node = this.parseAtom();
    const char = this.text[this.pos];
    if (char === "?" || char === "*" || char === "+") {
      this.pos++;
      return { kind: "repeat", node, min: char === "+" ? 1 : 0, max: char === "?" ? 1 : Infinity };
    }
    const braces = /^\{(\d+)(,(\d*))?\}/.exec(this.rest());
    if (!braces) return node;
    this.pos += braces[0].length;
    const min = Number(braces[1]);
    return { kind: "repeat", node, min, max: braces[2] === undefined ? min : braces[3] ? Number(braces[3]) : Infinity };
  }

  private parseAtom(): Node {
    const char = this.peek();
    if (char === "(") {
      this.pos++;
      const inner = this.parseAlt();
      if (this.peek() !== ")") throw new Error(`expected ) at ${this.rest()}`);
      this.pos++;
      return inner;
    }
    if (char === '"') return this.parseLiteral();
    if (char === "[") return this.parseClass();
    const name = /^[a-z0-9-]+/.exec(this.rest());
    if (!name) throw new Error(`unexpected ${this.rest()}`);
    this.pos += name[0].length;
    return { kind: "rule", name: name[0] };
  }

  private parseLiteral(): Node {
    this.pos++;
    let text = "";
    while (this.text[this.pos] !== '"') text += this.readChar();
    this.pos++;
    return { kind: "literal", text };
  }

  private parseClass(): Node {
    this.pos++;
    const negated = this.text[this.pos] === "^";
    if (negated) this.pos++;
    const ranges: Array<[number, number]> = [];
    while (this.text[this.pos] !== "]") {
      const lo = this.readChar().codePointAt(0)!;
      const isRange = this.text[this.pos] === "-" && this.text[this.pos + 1] !== "]";
      if (isRange) this.pos++;
      ranges.push([lo, isRange ? this.readChar().codePointAt(0)! : lo]);
    }
    this.pos++;
    return { kind: "class", negated, ranges };
  }

  private readChar(): string {
    const char = this.text[this.pos++]!;
    if (char !== "\\") return char;
    const escaped = this.text[this.pos++]!;
    if (escaped === "x") {
      const hex = this.text.slice(this.pos, this.pos + 2);
      this.pos += 2;
      return String.fromCharCode(parseInt(hex, 16));
    }
    return ({ n: "\n", r: "\r", t: "\t" } as Record<string, string>)[escaped] ?? escaped;
  }

  private peek(): string | undefined {
    this.skipSpace();
    return this.text[this.pos];
  }

  private skipSpace(): void {
    while (this.text[this.pos] === " ") this.pos++;
  }
}
