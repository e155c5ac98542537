import { describe, expect, it } from "vitest";
import type { GenerationPlan } from "./generation-plan.js";
import { sequentialIds } from "../lib/ids.js";
import { TokenEvents } from "./token-events.js";

/** A vocabulary of whole words: token i is WORDS[i]. */
const WORDS = ["<think>", "Let", " me", " add", " it", "\n</", "think", ">\n\n", "Five", "."];
const vocabulary = { detokenize: (tokens: readonly number[]) => tokens.map((token) => WORDS[token]).join("") };
const CLOSE = [5, 6, 7];

function events(budget?: number): TokenEvents {
  const plan: GenerationPlan = {
    modelId: "m", prompt: [0], maxTokens: 20, stop: [],
    reasoning: { insideAtStart: true, ...(budget !== undefined ? { budget: { tokens: budget, close: CLOSE } } : {}) },
  };
  return new TokenEvents(plan, vocabulary, sequentialIds());
}

/** Pushes what the backend would: the forced token when there is one, else the model's next pick. */
function generate(tokens: TokenEvents, picks: number[]): number[] {
  const pushed: number[] = [];
  for (const pick of picks) {
    const token = tokens.forcedToken() ?? pick;
    tokens.push(token);
    pushed.push(token);
  }
  return pushed;
}

describe("TokenEvents with a reasoning budget", () => {
  it("forces the closing tag, token by token, once the think block has spent its budget", () => {
    const tokens = events(2);
    expect(generate(tokens, [1, 2, 3, 4, 4, 8, 9])).toEqual([1, 2, ...CLOSE, 8, 9]);
    const finish = tokens.finish("stop");
    expect(finish.at(-1)).toMatchObject({ type: "finish", usage: { outputTokens: 7, reasoningTokens: 5 } });
  });

  it("forces nothing when the model closes the block within its budget, or has no budget", () => {
    expect(generate(events(10), [1, 5, 6, 7, 8])).toEqual([1, 5, 6, 7, 8]);
    expect(generate(events(), [1, 2, 3, 4, 3, 4])).toEqual([1, 2, 3, 4, 3, 4]);
  });
});
