/** Maps the internal SamplingOptions onto node-llama-cpp's evaluation options, with llama.cpp's usual defaults. */
import type { LlamaGrammarEvaluationState, LlamaModel, SequenceEvaluateOptions, Token } from "node-llama-cpp";
import { TokenBias } from "node-llama-cpp";
import type { SamplingOptions } from "../../messages.js";
import { PENALTY_WINDOW, SAMPLING_DEFAULTS as DEFAULTS } from "../../sampling-defaults.js";
import type { PlainSampling } from "./step-sampler.js";

/**
 * Evaluation options for one generation. `history` returns the prompt and output so far; penalties apply to its
 * last 64 tokens. Temperature 0 is greedy (the other samplers are then irrelevant). `forced` names the token the
 * next step must take, when one must (a think block closed at its budget).
 */
export function toEvaluateOptions(
  model: LlamaModel,
  sampling: SamplingOptions = {},
  history: () => Token[],
  grammarEvaluationState?: LlamaGrammarEvaluationState,
  forced?: () => number | undefined,
): SequenceEvaluateOptions {
  const temperature = sampling.temperature ?? DEFAULTS.temperature;
  const options: SequenceEvaluateOptions = temperature <= 0
    ? { temperature: 0 }
    : {
        temperature,
        topK: sampling.topK ?? DEFAULTS.topK,
        topP: sampling.topP ?? DEFAULTS.topP,
        minP: sampling.minP ?? DEFAULTS.minP,
        seed: sampling.seed === undefined ? undefined : toLlamaSeed(sampling.seed),
      };
  if (grammarEvaluationState) options.grammarEvaluationState = grammarEvaluationState;
  if (sampling.logitBias && Object.keys(sampling.logitBias).length > 0) options.tokenBias = toTokenBias(model, sampling.logitBias);
  if (forced) options.tokenBias = forcingBias(model, forced, options.tokenBias as TokenBias | undefined);
  // node-llama-cpp's loop then hands over end-of-generation tokens and goes on.
  if (sampling.ignoreEos) options.yieldEogToken = true;
  if (hasPenalty(sampling)) {
    options.repeatPenalty = {
      punishTokens: () => history().slice(-PENALTY_WINDOW),
      penalty: sampling.repeatPenalty,
      presencePenalty: sampling.presencePenalty,
      frequencyPenalty: sampling.frequencyPenalty,
    };
  }
  return options;
}

/**
 * What of `options` (from {@link toEvaluateOptions}) the step sampler runs natively, or undefined when they need more
 * of node-llama-cpp's sampler: a grammar, a token bias (a logit bias, a forced token), penalties, or a top-k beyond
 * `maxTopK` (0, all candidates, included). Logprobs and drafts are the caller's to keep off it.
 */
export function plainSampling(options: SequenceEvaluateOptions, maxTopK: number): PlainSampling | undefined {
  if (options.grammarEvaluationState || options.tokenBias || options.repeatPenalty || options.dryRepeatPenalty || options.xtc) return undefined;
  const { temperature = 0, topK = 0, topP = 1, minP = 0, seed } = options;
  if (temperature <= 0) return { temperature: 0, topK: 1, topP: 1, minP: 0 };
  if (!(topK >= 1 && topK <= maxTopK)) return undefined;
  return { temperature, topK, topP, minP, seed };
}

/** llama.cpp's seeds: 32-bit, where 0xFFFFFFFF means "pick one at random". */
const LLAMA_SEEDS = 0xffff_ffff;

/**
 * A request's seed (any signed 64-bit integer) as a llama.cpp seed: node-llama-cpp turns every negative seed into 0,
 * so the seed is taken modulo 2^32 − 1, which keeps small seeds, negative ones included, apart and never lands on
 * the random one.
 */
function toLlamaSeed(seed: number): number {
  return ((seed % LLAMA_SEEDS) + LLAMA_SEEDS) % LLAMA_SEEDS;
}

function hasPenalty(sampling: SamplingOptions): boolean {
  return (sampling.repeatPenalty !== undefined && sampling.repeatPenalty !== 1)
    || Boolean(sampling.presencePenalty)
    || Boolean(sampling.frequencyPenalty);
}

/** The request's bias, except at a step that must take one token: a bias no logit can outweigh. */
function forcingBias(model: LlamaModel, forced: () => number | undefined, requested?: TokenBias): () => TokenBias {
  const none = requested ?? new TokenBias(model.tokenizer);
  return () => {
    const token = forced();
    return token === undefined ? none : new TokenBias(model.tokenizer).set(token as Token, { logit: FORCING_LOGIT });
  };
}

/** Far above any logit a model produces, and finite, so temperature and top-p/top-k keep a single candidate. */
const FORCING_LOGIT = 1e9;

/** OpenAI's logit_bias is added to the logit, which is what node-llama-cpp's `{ logit }` bias does. */
function toTokenBias(model: LlamaModel, logitBias: Record<number, number>): TokenBias {
  const bias = new TokenBias(model.tokenizer);
  for (const [token, value] of Object.entries(logitBias)) bias.set(Number(token) as Token, { logit: value });
  return bias;
}
