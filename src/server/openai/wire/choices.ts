/**
 * Several generations for one request: `n` choices of a prompt, or one set per prompt of a legacy completion. They
 * run one after another, so each later choice finds the prompt already evaluated in the slot the first one used (the
 * prefix cache) and only generates. Usage follows OpenAI: each prompt counted once, completions summed.
 */
import type { DraftUsage, GenerationEvent, SamplingOptions, Usage } from "../../../engine/index.js";
import { addDraftUsage } from "../../draft-usage.js";
import { mapStream } from "../../../lib/map-stream.js";

/**
 * `n` copies of a request; with a seed, choice i samples with seed + i, so seeded choices differ yet repeat. A seed
 * near 2^63 wraps around: llama.cpp keeps 32 bits of it anyway.
 */
export function toChoiceRequests<R extends { sampling?: SamplingOptions }>(request: R, n: number): R[] {
  const seed = request.sampling?.seed;
  return Array.from({ length: n }, (_, i) => (seed === undefined || i === 0 ? request : { ...request, sampling: { ...request.sampling, seed: (seed + i) % 2 ** 32 } }));
}

/**
 * Usage of choices grouped `perPrompt` to a prompt: the prompt (and its reuse) of each group's first, all
 * completions and their drafts.
 */
export function sumChoiceUsage(usages: Usage[], perPrompt: number): Usage {
  const firsts = usages.filter((_, i) => i % perPrompt === 0);
  const draft = usages.reduce<DraftUsage | undefined>((sum, usage) => addDraftUsage(sum, usage.draft), undefined);
  return {
    inputTokens: firsts.reduce((sum, usage) => sum + usage.inputTokens, 0),
    cachedInputTokens: firsts.reduce((sum, usage) => sum + usage.cachedInputTokens, 0),
    outputTokens: usages.reduce((sum, usage) => sum + usage.outputTokens, 0),
    ...(usages.some((usage) => usage.reasoningTokens !== undefined) ? { reasoningTokens: usages.reduce((sum, usage) => sum + (usage.reasoningTokens ?? 0), 0) } : {}),
    ...(draft ? { draft } : {}),
  };
}

/** An event of one of a request's choices. */
export interface ChoiceEvent {
  choice: number;
  event: GenerationEvent;
}

/** Each choice's events in turn, tagged with its index; a choice's stream is only started once the one before ended. */
export function sequenceChoices(runs: Array<() => AsyncIterable<GenerationEvent>>): AsyncIterable<ChoiceEvent> {
  // The common case, one choice, without an async generator's promises per event.
  if (runs.length === 1) return mapStream(runs[0]!(), { map: (event) => ({ choice: 0, event }) });
  return eachInTurn(runs);
}

async function* eachInTurn(runs: Array<() => AsyncIterable<GenerationEvent>>): AsyncGenerator<ChoiceEvent> {
  for (const [choice, run] of runs.entries()) {
    for await (const event of run()) yield { choice, event };
  }
}
