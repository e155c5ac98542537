import { describe, expect, it } from "vitest";
import { ReasoningSplitter, type SplitPiece } from "./reasoning-splitter.js";

/** Feeds the chunks one by one, then flushes; adjacent pieces of one kind are merged, as blocks merge them. */
function split(chunks: string[], insideAtStart = false): SplitPiece[] {
  const splitter = new ReasoningSplitter(insideAtStart);
  const pieces = [...chunks.flatMap((chunk) => splitter.push(chunk)), ...splitter.flush()];
  return pieces.reduce<SplitPiece[]>((merged, piece) => {
    const last = merged.at(-1);
    if (last?.kind === piece.kind) last.text += piece.text;
    else merged.push({ ...piece });
    return merged;
  }, []);
}

describe("ReasoningSplitter", () => {
  it("splits a think block from the answer, trimming the blank lines around the tags", () => {
    expect(split(["<think>\nLet me add.\n</think>\n\nThe sum is 5."])).toEqual([
      { kind: "reasoning", text: "Let me add." },
      { kind: "text", text: "The sum is 5." },
    ]);
  });

  it("finds tags split across tokens, one character at a time", () => {
    const output = "<think>\nTwo and three.\n</think>\n\nFive.";
    expect(split([...output])).toEqual([{ kind: "reasoning", text: "Two and three." }, { kind: "text", text: "Five." }]);
    expect(split(["<th", "ink>", "Two", "\n</", "thi", "nk", ">\n", "\nFive."])).toEqual([
      { kind: "reasoning", text: "Two" },
      { kind: "text", text: "Five." },
    ]);
  });

  it("starts inside the block when the prompt opened it", () => {
    expect(split(["Thinking", " aloud.", "</think>", "Answer."], true)).toEqual([
      { kind: "reasoning", text: "Thinking aloud." },
      { kind: "text", text: "Answer." },
    ]);
  });

  it("keeps the leading space of a thought the prompt began (a prefill), which the output continues", () => {
    expect(split([" about", " colours.</think>", "Blue."], true)).toEqual([{ kind: "reasoning", text: "about colours." }, { kind: "text", text: "Blue." }]);
    const splitter = new ReasoningSplitter(true, true);
    expect([...splitter.push(" about"), ...splitter.push(" colours.</think>Blue.")]).toEqual([
      { kind: "reasoning", text: " about" },
      { kind: "reasoning", text: " colours." },
      { kind: "text", text: "Blue." },
    ]);
  });

  it("keeps an unclosed block as reasoning when the output ends (a token limit in the middle of thinking)", () => {
    expect(split(["<think>\nStill thinking", " about it\n", "</thi"])).toEqual([{ kind: "reasoning", text: "Still thinking about it\n</thi" }]);
    expect(split(["never closed"], true)).toEqual([{ kind: "reasoning", text: "never closed" }]);
  });

  it("keeps text before the tag as answer text", () => {
    expect(split(["Sure. ", "<think>why</think>", "Done."])).toEqual([
      { kind: "text", text: "Sure." },
      { kind: "reasoning", text: "why" },
      { kind: "text", text: "Done." },
    ]);
  });

  it("passes text without tags through, releasing a held tag prefix that never became a tag", () => {
    expect(split(["a < b and ", "<thin", "g>"])).toEqual([{ kind: "text", text: "a < b and <thing>" }]);
    expect(split(["x <"])).toEqual([{ kind: "text", text: "x <" }]);
  });

  it("streams reasoning as it comes, holding back only what could start the closing tag", () => {
    const splitter = new ReasoningSplitter(true);
    expect(splitter.push("one two")).toEqual([{ kind: "reasoning", text: "one two" }]);
    expect(splitter.push(" three </")).toEqual([{ kind: "reasoning", text: " three" }]);
    expect(splitter.push("think>Yes")).toEqual([{ kind: "text", text: "Yes" }]);
  });
});
