/**
 * Measures a model's step cost at load (see step-cost.ts): on an empty sequence, one step of many prompt tokens and
 * steps of one token. The line through the two sizes gives the fixed part and the per-token part. On a GPU a first
 * evaluation pays for the pipelines once and is not timed; on a CPU that would double the cost of a measurement
 * that is already a second for a 1.5B model on 2 cores, so the single steps come first and the first of them, which
 * reads the weights from the page cache, is left out by their median (timed first, the large step had put the
 * default model at 6–13 ms a prompt token instead of ~2.7, and its first prompts were cut into two steps).
 *
 * With a second sequence it also times the copy of one sequence's cache into another (slot-pool.ts), which llama.cpp
 * performs at the next decode: a copy and a step of one token, less a step of one token.
 */
import type { LlamaContextSequence, LlamaModel, Token } from "node-llama-cpp";
import { DEVICE_PRIOR, type StepCostParts, type StepDevice } from "./step-cost.js";
import { copyPrefix } from "./copy-prefix.js";

/** Prompt tokens in the large step: enough to show the per-token part, cheap enough on a small CPU. */
const CALIBRATION_TOKENS: Record<StepDevice, number> = { cpu: 32, gpu: 256 };
const SINGLE_STEPS = 3;
const COPY_SAMPLES = 2;

/** The measured step cost, and what a prefix copy adds to a step (absent: no second sequence to copy into). */
export interface StepCalibration {
  parts: StepCostParts;
  prefixCopyMs?: number;
}

export async function calibrateStepCost(model: LlamaModel, sequence: LlamaContextSequence, device: StepDevice, copyInto?: LlamaContextSequence): Promise<StepCalibration> {
  const count = CALIBRATION_TOKENS[device];
  const words = model.tokenize("The quick brown fox jumps over the lazy dog while the server measures its steps. ");
  const tokens = Array.from({ length: count + SINGLE_STEPS }, (_, i) => words[i % words.length]!) as Token[];
  try {
    if (device === "gpu") {
      await sequence.evaluateWithoutGeneratingNewTokens(tokens.slice(0, count));
      await sequence.clearHistory();
    }
    // The single steps first: each reads every weight, so the first (its median leaves it out) pages the weights in and
    // the large step is timed warm.
    const ones: number[] = [];
    for (let i = 0; i < SINGLE_STEPS; i++) {
      const started = performance.now();
      await sequence.evaluateWithoutGeneratingNewTokens([tokens[count + i]!]);
      ones.push(performance.now() - started);
    }
    const oneMs = ones.sort((a, b) => a - b)[Math.floor(SINGLE_STEPS / 2)]!;
    const started = performance.now();
    await sequence.evaluateWithoutGeneratingNewTokens(tokens.slice(0, count));
    const manyMs = performance.now() - started;
    const prefixCopyMs = copyInto && await timePrefixCopy(sequence, copyInto, tokens[0]!, oneMs);
    return { parts: partsFromCalibration({ tokens: count, manyMs, oneMs }, device), ...(prefixCopyMs === undefined ? {} : { prefixCopyMs }) };
  } finally {
    await sequence.clearHistory();
  }
}

/** The least of a few copies of `from`'s cache into `into`, each followed by a step of one token, less `oneMs`. */
async function timePrefixCopy(from: LlamaContextSequence, into: LlamaContextSequence, token: Token, oneMs: number): Promise<number | undefined> {
  const samples: number[] = [];
  try {
    for (let i = 0; i < COPY_SAMPLES; i++) {
      const started = performance.now();
      if (!(await copyPrefix(into, from, from.nextTokenIndex))) return undefined;
      await into.evaluateWithoutGeneratingNewTokens([token]);
      samples.push(performance.now() - started - oneMs);
      await into.clearHistory();
    }
    return round3(Math.max(0, Math.min(...samples)));
  } finally {
    await into.clearHistory();
  }
}

/** The measured parts as a model's details show them (`stepCostAtLoad`). */
export function describeStepCost(calibration: StepCalibration): { fixedMs: number; perTokenMs: number; prefixCopyMs?: number } {
  const { parts, prefixCopyMs } = calibration;
  return { fixedMs: round3(parts.fixed), perTokenMs: round3(parts.perToken), ...(prefixCopyMs === undefined ? {} : { prefixCopyMs }) };
}

const round3 = (value: number): number => Math.round(value * 1000) / 1000;

/** Two timed evaluations on an empty sequence: a step of `tokens` prompt tokens and a step of one. */
export interface CalibrationTimings {
  tokens: number;
  manyMs: number;
  oneMs: number;
}

/** The cost model's parts from a calibration: the line through its two steps, attention scaled from the prior. */
export function partsFromCalibration(timings: CalibrationTimings, device: StepDevice): StepCostParts {
  const prior = DEVICE_PRIOR[device];
  const perToken = Math.max((timings.manyMs - timings.oneMs) / (timings.tokens - 1), timings.manyMs / timings.tokens / 50);
  const fixed = Math.max(timings.oneMs - perToken, 0.01);
  return { fixed, perToken, perTokenPerKDepth: perToken * (prior.perTokenPerKDepth / prior.perToken) };
}
