/**
 * Picks the next token from full logits on the CPU, in llama.cpp's sampler order (penalties → top-k → top-p →
 * min-p → temperature → draw), with llama.cpp's defaults and a seeded generator, so a seed repeats a reply. Greedy
 * decoding without penalties or grammar never needs the logits: the GPU's argmax is used instead. A grammar is
 * applied as llama.cpp applies it: the token picked is checked, and only when the grammar rejects it are the logits
 * of every rejected token masked and the pick repeated (so the common step costs one check, not one per token).
 */
import type { SamplingOptions, TokenLogprob } from "../../index.js";
import { EngineError } from "../../../errors/engine-error.js";
import { PENALTY_WINDOW, SAMPLING_DEFAULTS } from "../../sampling-defaults.js";
import type { TokenGrammar } from "../../text/token-grammar.js";
import { seededRandom } from "../../../lib/seeded-random.js";
import { TOP_CANDIDATES } from "./kernels/top-k.js";

export interface TokenSampler {
  /** True when the GPU's argmax is the answer (greedy, no penalties): the logits need not be read back. */
  readonly usesGpuArgmax: boolean;
  /**
   * True when a pick looks only at the best TOP_CANDIDATES logits (top-k sampling within them, no penalties or bias):
   * `pickFrom` then takes just those, which a GPU can select and send instead of the whole row.
   */
  readonly needsOnlyTop: boolean;
  /**
   * Samples from `logits` (modified in place by penalties and the grammar's mask); `history` is prompt + output so
   * far; `grammar` (with `vocabularySize`, the ids it knows) limits the pick to the tokens it accepts next.
   */
  pick(logits: Float32Array, history: readonly number[], grammar?: { rules: TokenGrammar; vocabularySize: number }): number;
  /** Samples as `pick` would from the full row, given its best candidates (best first; needsOnlyTop only). */
  pickFrom(best: readonly Candidate[]): number;
}

export function createSampler(options: SamplingOptions = {}): TokenSampler {
  const temperature = options.temperature ?? SAMPLING_DEFAULTS.temperature;
  const penalties = hasPenalties(options) || options.logitBias !== undefined;
  const random = seededRandom(options.seed ?? Math.floor(Math.random() * 2 ** 32));
  const k = options.topK ?? SAMPLING_DEFAULTS.topK;
  const p = options.topP ?? SAMPLING_DEFAULTS.topP;
  const minProbability = options.minP ?? SAMPLING_DEFAULTS.minP;
  return {
    usesGpuArgmax: temperature <= 0 && !penalties,
    needsOnlyTop: temperature > 0 && !penalties && k > 0 && k <= TOP_CANDIDATES,
    pickFrom(best) {
      // The same chain as pick's: the row's top k are the first k of its best candidates.
      return draw(minP(topP(best.slice(0, k), p), minProbability), temperature, random());
    },
    pick(logits, history, grammar) {
      if (penalties) applyPenalties(logits, history.slice(-PENALTY_WINDOW), options);
      const choose = (): number => {
        if (temperature <= 0) return argmax(logits);
        const candidates = k <= 0 && p < 1 ? nucleus(logits, p) : topP(topK(logits, k), p);
        return draw(minP(candidates, minProbability), temperature, random());
      };
      const token = choose();
      if (!grammar || grammar.rules.accepts(token)) return token;
      maskRejected(logits, grammar.rules, grammar.vocabularySize);
      return choose();
    },
  };
}

/** Sets the logit of every token `grammar` rejects (and of padding ids past the vocabulary) to −∞. */
function maskRejected(logits: Float32Array, grammar: TokenGrammar, vocabularySize: number): void {
  let open = 0;
  for (let id = 0; id < logits.length; id++) {
    if (id < vocabularySize && logits[id] !== -Infinity && grammar.accepts(id)) open++;
    else logits[id] = -Infinity;
  }
  if (open === 0) throw new EngineError("backend_failure", "the grammar accepts no token here");
}

/** log-softmax of the raw logits: the sampled token's log-probability and the `top` most likely alternatives. */
export function logprobsOf(logits: Float32Array, token: number, top: number, detokenize: (token: number) => string): TokenLogprob {
  let max = -Infinity;
  for (const value of logits) max = Math.max(max, value);
  let sum = 0;
  for (const value of logits) sum += Math.exp(value - max);
  const logZ = max + Math.log(sum);
  const best = top > 0 ? topK(logits, top) : [];
  return {
    token: detokenize(token),
    logprob: logits[token]! - logZ,
    top: best.map(({ id, logit }) => ({ token: detokenize(id), logprob: logit - logZ })),
  };
}

export interface Candidate { id: number; logit: number }

/** Highest value, lowest index on ties (as llama.cpp's greedy sampler). */
export function argmax(values: Float32Array): number {
  let best = 0;
  for (let i = 1; i < values.length; i++) if (values[i]! > values[best]!) best = i;
  return best;
}

/**
 * The k largest logits, best first, ties to the lower id (k ≤ 0: all of them). A k much smaller than the vocabulary
 * is selected in one pass through a heap of k: sorting 152k candidates cost tens of milliseconds a token, more than
 * a GPU's whole decode step.
 */
export function topK(logits: Float32Array, k: number): Candidate[] {
  if (k <= 0 || k * 8 >= logits.length) {
    const all = Array.from(logits, (logit, id) => ({ id, logit }));
    all.sort(bestFirst);
    return k > 0 ? all.slice(0, k) : all;
  }
  // A min-heap of ids, the worst kept candidate at its root.
  const heap = new Int32Array(k);
  const worse = (a: number, b: number) => logits[a]! < logits[b]! || (logits[a] === logits[b] && a > b);
  const siftDown = (size: number) => {
    for (let at = 0; ;) {
      const left = 2 * at + 1;
      if (left >= size) return;
      const child = left + 1 < size && worse(heap[left + 1]!, heap[left]!) ? left + 1 : left;
      if (!worse(heap[child]!, heap[at]!)) return;
      [heap[at], heap[child]] = [heap[child]!, heap[at]!];
      at = child;
    }
  };
  for (let id = 0; id < k; id++) {
    heap[id] = id;
    for (let at = id; at > 0 && worse(heap[at]!, heap[(at - 1) >> 1]!); at = (at - 1) >> 1) {
      [heap[at], heap[(at - 1) >> 1]] = [heap[(at - 1) >> 1]!, heap[at]!];
    }
  }
  for (let id = k; id < logits.length; id++) {
    if (!worse(heap[0]!, id)) continue;
    heap[0] = id;
    siftDown(k);
  }
  return Array.from(heap, (id) => ({ id, logit: logits[id]! })).sort(bestFirst);
}

function bestFirst(a: Candidate, b: Candidate): number {
  return b.logit - a.logit || a.id - b.id;
}

function softmax(candidates: Candidate[], temperature = 1): number[] {
  const max = candidates[0]!.logit;
  const weights = candidates.map(({ logit }) => Math.exp((logit - max) / temperature));
  const sum = weights.reduce((a, b) => a + b, 0);
  return weights.map((w) => w / sum);
}

/** The smallest best-first prefix whose probability reaches p (at least one). */
function topP(candidates: Candidate[], p: number): Candidate[] {
  if (p >= 1) return candidates;
  const probabilities = softmax(candidates);
  let cumulative = 0;
  for (let i = 0; i < candidates.length; i++) {
    cumulative += probabilities[i]!;
    if (cumulative >= p) return candidates.slice(0, i + 1);
  }
  return candidates;
}

/**
 * Top-p over the whole vocabulary (top-k off) without sorting all of it: the softmax's normaliser in one pass, then
 * the best 64, 512, … until their probability reaches p. The same prefix as sorting everything, up to the last
 * bits of the normaliser's rounding (a sum in another order).
 */
export function nucleus(logits: Float32Array, p: number): Candidate[] {
  let max = -Infinity;
  for (const value of logits) if (value > max) max = value;
  let sum = 0;
  for (const value of logits) sum += Math.exp(value - max);
  for (let k = 64; ; k *= 8) {
    const best = topK(logits, k);
    let cumulative = 0;
    for (let i = 0; i < best.length; i++) {
      cumulative += Math.exp(best[i]!.logit - max) / sum;
      if (cumulative >= p) return best.slice(0, i + 1);
    }
    if (best.length >= logits.length) return best;
  }
}

/** Candidates at least minP times as likely as the best. */
function minP(candidates: Candidate[], p: number): Candidate[] {
  if (p <= 0) return candidates;
  const floor = candidates[0]!.logit + Math.log(p);
  return candidates.filter(({ logit }) => logit >= floor);
}

function draw(candidates: Candidate[], temperature: number, u: number): number {
  const probabilities = softmax(candidates, temperature);
  let cumulative = 0;
  let last = 0;
  for (let i = 0; i < candidates.length; i++) {
    cumulative += probabilities[i]!;
    if (u < cumulative) return candidates[i]!.id;
    if (probabilities[i]! > 0) last = i;
  }
  // Rounding left u past the sum: the last possible candidate (a masked one has probability 0).
  return candidates[last]!.id;
}

function hasPenalties(options: SamplingOptions): boolean {
  return (options.repeatPenalty !== undefined && options.repeatPenalty !== 1) || Boolean(options.presencePenalty) || Boolean(options.frequencyPenalty);
}

/** llama.cpp's penalties: repeat divides positive logits (multiplies negative ones); frequency and presence subtract. */
function applyPenalties(logits: Float32Array, recent: readonly number[], options: SamplingOptions): void {
  const counts = new Map<number, number>();
  for (const token of recent) counts.set(token, (counts.get(token) ?? 0) + 1);
  const repeat = options.repeatPenalty ?? 1;
  for (const [token, count] of counts) {
    let logit = logits[token]!;
    logit = logit > 0 ? logit / repeat : logit * repeat;
    logit -= count * (options.frequencyPenalty ?? 0) + (options.presencePenalty ?? 0);
    logits[token] = logit;
  }
  for (const [token, bias] of Object.entries(options.logitBias ?? {})) logits[Number(token)]! += bias;
}
