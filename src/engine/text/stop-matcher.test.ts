import { describe, expect, it } from "vitest";
import { StopMatcher } from "./stop-matcher.js";

/** Feeds `chunks` and collects everything emitted, the stop that matched and the flushed rest. */
function run(stops: string[], chunks: string[]): { text: string; stop?: string } {
  const matcher = new StopMatcher(stops);
  let text = "";
  for (const chunk of chunks) {
    const out = matcher.push(chunk);
    text += out.text;
    if (out.stop !== undefined) return { text, stop: out.stop };
  }
  return { text: text + matcher.flush() };
}

/** Every way to cut `text` in two, plus one chunk per character. */
function splits(text: string): string[][] {
  const all = [[...text]];
  for (let i = 0; i <= text.length; i++) all.push([text.slice(0, i), text.slice(i)]);
  return all;
}

describe("StopMatcher", () => {
  it("cuts at a stop string however the text is split", () => {
    for (const chunks of splits("Hello END world")) {
      expect(run(["END"], chunks)).toEqual({ text: "Hello ", stop: "END" });
    }
  });

  it("holds back a partial stop and releases it when it does not complete", () => {
    const matcher = new StopMatcher(["</s>"]);
    expect(matcher.push("a</")).toEqual({ text: "a" });
    expect(matcher.push("b")).toEqual({ text: "</b" });
    expect(matcher.push("<")).toEqual({ text: "" });
    expect(matcher.flush()).toBe("<");
  });

  it("picks the stop that completes first, the same for every split", () => {
    for (const chunks of splits("xabcd")) expect(run(["abcd", "b"], chunks)).toEqual({ text: "xa", stop: "b" });
    for (const chunks of splits("xabc")) expect(run(["bc", "abc"], chunks)).toEqual({ text: "x", stop: "abc" });
  });

  it("handles overlapping prefixes and repeated characters", () => {
    for (const chunks of splits("aaab")) expect(run(["aab"], chunks)).toEqual({ text: "a", stop: "aab" });
  });

  it("ignores empty stops and passes text straight through without stops", () => {
    expect(new StopMatcher([""]).push("abc")).toEqual({ text: "abc" });
    expect(new StopMatcher([]).push("abc")).toEqual({ text: "abc" });
  });

  it("matches a stop at the very start and ignores text after a stop", () => {
    const matcher = new StopMatcher(["\n\n"]);
    expect(matcher.push("\n\nrest")).toEqual({ text: "", stop: "\n\n" });
    expect(matcher.push("more")).toEqual({ text: "" });
    expect(matcher.flush()).toBe("");
  });

  it("handles surrogate pairs in stop strings", () => {
    for (const chunks of [["a😀", "b"], ["a", "😀b"]]) expect(run(["😀"], chunks)).toEqual({ text: "a", stop: "😀" });
  });
});
