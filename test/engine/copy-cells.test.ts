/**
 * Copying a prefix by cells (copy-prefix.ts, native/copy-cells.c) against the same tokens kept in place: real default
 * model on the CPU, two sequences of one context. After the copy the target holds exactly the prefix (whatever it held
 * before is gone), and evaluating the rest of the prompt there gives the same next-token distribution as on the
 * source, whose cache the copy left alone.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import type { Llama, LlamaContext, LlamaContextSequence, LlamaModel, Token } from "node-llama-cpp";
import { copyPrefix, useCellCopies } from "../../src/engine/backends/llama-cpp/copy-prefix.js";
import { openLlama } from "../../src/engine/backends/llama-cpp/load-llama.js";
import { realModelPath, testThreads } from "../helpers/real-model.js";

let llama: Llama;
let model: LlamaModel;
let context: LlamaContext;

beforeAll(async () => {
  llama = await openLlama(false);
  model = await llama.loadModel({ modelPath: realModelPath() });
  context = await model.createContext({ contextSize: 1024, sequences: 2, threads: testThreads() });
});

afterAll(async () => {
  await context?.dispose();
  await model?.dispose();
  await llama?.dispose();
});

const text = (n: number, word: string) => Array.from({ length: n }, (_, i) => `${word} ${i} glows at ${900 + i} degrees.`).join(" ");

/** The next-token probabilities after evaluating `rest` on `sequence` (top 20, by token). */
async function nextAfter(sequence: LlamaContextSequence, rest: Token[]): Promise<Map<Token, number>> {
  const results = await sequence.controlledEvaluate([...rest.slice(0, -1), [rest.at(-1)!, { generateNext: { probabilities: true } }]]);
  const probabilities = results.at(-1)?.next.probabilities;
  if (!probabilities) throw new Error("no probabilities");
  return new Map([...probabilities].slice(0, 20));
}

it("copies a sequence's first tokens by cells, replacing what the target held, with the source's distribution", async () => {
  expect(useCellCopies(context, model)).toBe(true);
  const source = context.getSequence();
  const target = context.getSequence();
  const prompt = model.tokenize(text(12, "Kiln"));
  const keep = 100;
  expect(prompt.length).toBeGreaterThan(keep + 20);
  // The target holds a longer, different text first: cells of it left behind would change its distribution.
  await target.evaluateWithoutGeneratingNewTokens(model.tokenize(text(20, "Furnace")));
  await source.evaluateWithoutGeneratingNewTokens(prompt);

  expect(await copyPrefix(target, source, keep, "cells")).toBe("cells");
  expect(target.nextTokenIndex).toBe(keep);
  expect(target.contextTokens).toEqual(prompt.slice(0, keep));
  const copied = await nextAfter(target, prompt.slice(keep));

  // The source still holds its whole prompt; evaluated from the same point, in the same chunk, it agrees.
  expect(source.contextTokens).toEqual(prompt);
  await source.eraseContextTokenRanges([{ start: keep, end: prompt.length }]);
  const inPlace = await nextAfter(source, prompt.slice(keep));
  expect([...copied.keys()].slice(0, 5)).toEqual([...inPlace.keys()].slice(0, 5));
  for (const [token, probability] of inPlace) expect(Math.abs((copied.get(token) ?? 0) - probability)).toBeLessThan(1e-4);
  source.dispose();
  target.dispose();
});

it("copies by stream where cells are not asked for", async () => {
  const source = context.getSequence();
  const target = context.getSequence();
  await source.evaluateWithoutGeneratingNewTokens(model.tokenize(text(4, "Kiln")));
  expect(await copyPrefix(target, source, 10)).toBe("stream");
  expect(target.nextTokenIndex).toBe(10);
  // The decode that performs llama.cpp's copy of the stream.
  await target.evaluateWithoutGeneratingNewTokens(model.tokenize(" and"));
  expect(target.nextTokenIndex).toBe(11);
  source.dispose();
  target.dispose();
});
