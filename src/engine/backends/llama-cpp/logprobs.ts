/**
 * Logprobs from node-llama-cpp: a generated token's (from the step's metadata, made to describe the model's own
 * distribution) and every prompt token's (for `echo` with logprobs, by evaluating the prompt afresh and asking each
 * position for the logits it needs).
 */
import type { LlamaContext, LlamaContextSequence, LlamaModel, Token } from "node-llama-cpp";
import type { PromptTokenLogprob, TokenLogprob } from "../../events.js";

/** Most alternatives any surface asks for (chat's `top_logprobs` goes to 20). */
const MAX_TOP_LOGPROBS = 20;

type TokenValues = Array<Token | number>;
type SampleResult = [token: Token | -1, probabilities?: TokenValues, confidence?: number, logits?: TokenValues, totalLogitWeight?: number];
type LogitsFilter = [tokens: readonly Token[], includeMax: boolean, includeMin: boolean, includeSelected: boolean, includeTop: number];
interface NativeSampling {
  sampleToken(index: number, sampler: unknown, probabilities?: boolean, confidence?: boolean, logits?: LogitsFilter, totalLogitWeight?: boolean): Promise<Token | -1 | SampleResult>;
}
interface NativeSampler { applyConfig(config: object): void; dispose(): void }

/**
 * A step's metadata (`confidence`, `probabilities`) describes the candidates left after temperature, top-k and top-p;
 * OpenAI and vLLM report the model's own distribution, the log-softmax of the raw logits. kiln asks for a step's
 * metadata only for logprobs, so on `context` every such request samples as asked, then reads the raw logits at the
 * same position through a greedy sampler (which keeps every candidate and changes none): the sampled token's
 * probability and the best {@link MAX_TOP_LOGPROBS} become the step's metadata. Without the native methods it
 * leaves the context as it is.
 */
export function reportModelDistribution(context: LlamaContext, model: LlamaModel): void {
  const native = (context as unknown as { _ctx?: Partial<NativeSampling> })._ctx;
  const bindings = (model as unknown as { _llama?: { _bindings?: { AddonSampler?: new (model: unknown) => NativeSampler } }; _model?: unknown });
  const { sampleToken } = native ?? {};
  const Sampler = bindings._llama?._bindings?.AddonSampler;
  if (!native || typeof sampleToken !== "function" || !Sampler) return;
  Object.defineProperty(native, "sampleToken", {
    configurable: true,
    writable: true,
    value: async (index: number, sampler: unknown, probabilities?: boolean, confidence?: boolean, ...rest: unknown[]) => {
      if (!probabilities && !confidence || rest.length > 0) return sampleToken.call(native, index, sampler, probabilities, confidence, ...rest as []);
      const sampled = await sampleToken.call(native, index, sampler, false, false);
      const token = Array.isArray(sampled) ? sampled[0] : sampled;
      if (token === -1) return [token];
      // One greedy sampler per read: reads of several sequences may run at once, and a sampler holds its candidates.
      const raw = new Sampler(bindings._model);
      try {
        raw.applyConfig({ temperature: 0 });
        const read = await sampleToken.call(native, index, raw, false, false, [[token], false, false, false, MAX_TOP_LOGPROBS], true) as SampleResult;
        return toModelMetadata(token, read[3] ?? [], read[4] ?? 1);
      } finally {
        raw.dispose();
      }
    },
  });
}

/** [token, the best tokens' probabilities (token, p pairs, best first), the token's probability] from raw logits. */
function toModelMetadata(token: Token, logits: TokenValues, totalLogitWeight: number): SampleResult {
  // The best tokens and the sampled one, which may be among them.
  const byToken = new Map<Token, number>();
  for (let i = 0; i + 1 < logits.length; i += 2) byToken.set(logits[i] as Token, logits[i + 1]!);
  const pairs = [...byToken].sort((a, b) => b[1] - a[1]);
  // totalLogitWeight = Σ exp(logit − max), so p(t) = exp(logit(t) − max) / weight.
  const max = pairs[0]?.[1] ?? 0;
  const probability = (logit: number) => Math.exp(logit - max) / totalLogitWeight;
  const top = pairs.slice(0, MAX_TOP_LOGPROBS).flatMap(([id, logit]) => [id, probability(logit)]);
  return [token, top, probability(byToken.get(token) ?? -Infinity)];
}

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
