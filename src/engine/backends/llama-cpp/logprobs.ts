/**
 * Logprobs from node-llama-cpp: a generated token's (from the step's metadata) and every prompt token's (for `echo`
 * with logprobs, by evaluating the prompt afresh and asking each position for the logits it needs).
 */
import type { LlamaContextSequence, LlamaModel, Token } from "node-llama-cpp";
import type { PromptTokenLogprob, TokenLogprob } from "../../events.js";

/** node-llama-cpp exposes the sampled token's probability and the (sorted) candidate distribution. */
export function toLogprob(model: LlamaModel, step: { token: Token; confidence?: number; probabilities?: Map<Token, number> }, top: number): TokenLogprob {
  const alternatives = [...(step.probabilities ?? new Map<Token, number>()).entries()].slice(0, top);
  return {
    token: model.detokenize([step.token], false),
    logprob: Math.log(step.confidence ?? step.probabilities?.get(step.token) ?? 0),
    top: alternatives.map(([token, probability]) => ({ token: model.detokenize([token], false), logprob: Math.log(probability) })),
  };
}

/** Prompt tokens scored per evaluation: each asks for logits, and llama.cpp sizes its output buffer by the batch's. */
const SCORE_CHUNK = 64;

/**
 * The logprob of each prompt token given those before it (the first has none, hence null), with `top` alternatives:
 * the prompt but its last token is evaluated from an empty sequence (cached positions keep no logits), each
 * position asking only for the logits it needs (the next token's, the best `top`, the maximum) and their total weight.
 */
export async function scorePrompt(model: LlamaModel, sequence: LlamaContextSequence, prompt: Token[], top: number): Promise<PromptTokenLogprob[]> {
  await sequence.clearHistory();
  const text = (token: Token) => model.detokenize([token], false);
  const logprobs: PromptTokenLogprob[] = [{ token: text(prompt[0]!), logprob: null, top: null }];
  for (let start = 0; start < prompt.length - 1; start += SCORE_CHUNK) {
    const chunk = prompt.slice(start, Math.min(start + SCORE_CHUNK, prompt.length - 1));
    const outputs = await sequence.controlledEvaluate(chunk.map((token, i) => [token, {
      generateNext: { logits: { filter: { tokens: [prompt[start + i + 1]!], includeTop: top, includeMax: true } }, totalLogitWeight: true },
    }]));
    chunk.forEach((_, i) => {
      const next = outputs[i]?.next;
      const logits = [...(next?.logits ?? new Map<Token, number>()).entries()].sort((a, b) => b[1] - a[1]);
      // totalLogitWeight = Σ exp(logit − max), so log p(t) = logit(t) − max − log(weight).
      const logZ = (logits[0]?.[1] ?? 0) + Math.log(next?.totalLogitWeight ?? 1);
      const token = prompt[start + i + 1]!;
      logprobs.push({
        token: text(token),
        logprob: (logits.find(([id]) => id === token)?.[1] ?? -Infinity) - logZ,
        top: logits.slice(0, top).map(([id, logit]) => ({ token: text(id), logprob: logit - logZ })),
      });
    });
  }
  return logprobs;
}
