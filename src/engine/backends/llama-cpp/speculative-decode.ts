/**
 * The token loop with a draft model (speculative decoding). Each step the draft sequence, kept in step with the
 * target's tokens, proposes up to `--draft-max` tokens, stopping early where it is unsure: greedily at temperature 0,
 * otherwise drawn from its own distribution under the request's sampling parameters. The target evaluates its pending
 * token and the proposals in one multi-token evaluation, sampling a token at every position with the request's own
 * sampler, and keeps the proposals speculative-acceptance.ts accepts: at temperature 0 exactly the target's greedy
 * output, otherwise tokens distributed as the target's own sampling gives them (standard speculative sampling). The
 * rejected proposals are erased from the target's cache before the tokens go out.
 *
 * Where a step's cost is mostly reading the weights, evaluating a few tokens costs little more than one, and a step
 * yields as many tokens as the draft got right, plus one; where drafting has been slower than the target's own token
 * loop, that loop runs instead, between probes (draft-length.ts).
 */
import type { ControlledEvaluateInputItem, LlamaContextSequence, LlamaModel, SequenceEvaluateOptions, Token } from "node-llama-cpp";
import type { DraftUsage } from "../../events.js";
import { ALONE_TOKENS, type DraftLength } from "./draft-length.js";
import { judgeProposals, type Proposal, type TargetSample } from "./speculative-acceptance.js";

/** Below this probability of its best token the draft stops proposing (llama.cpp's speculative `p_min`). */
const DRAFT_MIN_CONFIDENCE = 0.75;

/** The most candidates (top-k) a request may keep for its draft to sample: a few hundred token–probability pairs a position. */
const SAMPLED_DRAFT_MAX_CANDIDATES = 256;

/** One generated token, shaped as node-llama-cpp's evaluateWithMetadata yields it. */
export interface SpeculativeStep { token: Token }

/** What a speculative loop needs beside the target's sequence. */
export interface SpeculativeParts {
  model: LlamaModel;
  draft: LlamaContextSequence;
  /** Decides whether each step drafts, from the speed each way has had (one per model). */
  length: DraftLength;
  /** Whether this sequence generates alone in its context (drafting is for a lone stream). */
  alone(): boolean;
  /** Counted as the steps go: proposals the target evaluated, and those it kept. */
  usage: DraftUsage;
}

/** The sampler options controlledEvaluate takes (no grammar, no penalties: such requests are not drafted). */
type SamplerOptions = Pick<SequenceEvaluateOptions, "temperature" | "minP" | "topK" | "topP" | "seed" | "tokenBias">;

/**
 * Generates after `input` (the prompt's tokens not yet evaluated, at least one) until the reader stops or an
 * end-of-generation token, which is not yielded (as evaluateWithMetadata does).
 */
export async function* speculate(
  target: LlamaContextSequence,
  input: Token[],
  parts: SpeculativeParts,
  options: SamplerOptions,
): AsyncGenerator<SpeculativeStep> {
  const seeds = stepSeeds();
  const { temperature, minP, topK, topP, tokenBias } = options;
  // At a temperature the draft samples as the request does (but for a logit bias: node-llama-cpp binds a bias to one
  // model), and the target judges each proposal by its probability. Both distributions cross into JavaScript at every
  // position, so a request keeping more candidates (top-k 0 keeps the whole vocabulary) drafts greedily instead,
  // which is exact too (speculative-acceptance.ts).
  const bounded = topK !== undefined && topK >= 1 && topK <= SAMPLED_DRAFT_MAX_CANDIDATES;
  const sampling = (temperature ?? 0) > 0 && bounded ? { temperature, minP, topK, topP } : undefined;
  let pending = input;
  // Kept proposals evaluated into the target's cache but not yet read: erased if the reader stops before them.
  let unread = 0;
  try {
    for (;;) {
      // A prompt's first token is not drafted: the draft would have to read the whole prompt first. Nor is a stream
      // beside others: they would wait at each decode step while it drafts, and their tokens already share the
      // weights' reads.
      const wanted = pending.length === 1 && parts.alone() ? room(target, parts.length.next()) : 0;
      if (wanted > 0) await catchUp(parts.draft, [...target.contextTokens, ...pending]);
      // Timed from here: the draft reading the prompt once is not what each step costs.
      const started = performance.now();
      const proposals = wanted > 0 ? await propose(parts, pending[0]!, wanted, sampling && { ...sampling, seed: seeds() }) : [];
      if (proposals.length === 0) {
        const last = yield* alone(target, pending, parts, { ...options, seed: seeds() }, wanted > 0 || pending.length > 1 ? 1 : ALONE_TOKENS);
        if (last === undefined) return;
        // A draft that proposed nothing still cost its step.
        if (wanted > 0) parts.length.drafted(1, performance.now() - started);
        pending = [last];
        continue;
      }
      const sample = { token: true, probabilities: sampling !== undefined, options: { temperature, minP, topK, topP, tokenBias, seed: seeds() } };
      const results = await target.controlledEvaluate([pending[0]!, ...proposals.map((proposal) => proposal.token)].map((token): ControlledEvaluateInputItem => [token, { generateNext: sample }]));
      const { kept, next } = judgeProposals(proposals, results.map((result) => toSample(result?.next)));
      parts.usage.drafted += proposals.length;
      parts.usage.accepted += kept;
      if (kept < proposals.length) await target.eraseContextTokenRanges([{ start: target.nextTokenIndex - (proposals.length - kept), end: target.nextTokenIndex }]);
      parts.length.drafted(kept + 1, performance.now() - started);
      const out = [...proposals.slice(0, kept).map((proposal) => proposal.token), next];
      unread = kept;
      for (const token of out) {
        if (parts.model.isEogToken(token)) return;
        unread = Math.max(0, unread - 1);
        yield { token };
      }
      pending = [next];
    }
  } finally {
    if (unread > 0) await target.eraseContextTokenRanges([{ start: target.nextTokenIndex - unread, end: target.nextTokenIndex }]);
  }
}

/**
 * Brings the draft sequence to `tokens` (the target's cache and its pending token) but their last: it keeps what it
 * shares with them and evaluates the rest (the whole prompt at a request's first drafted step, else the tokens the
 * target kept since the draft's last step, or those after its first wrong proposal).
 */
async function catchUp(draft: LlamaContextSequence, tokens: Token[]): Promise<void> {
  const shared = Math.min(draft.nextTokenIndex === 0 ? 0 : draft.compareContextTokens(tokens).firstDifferentIndex, tokens.length - 1);
  if (shared < draft.nextTokenIndex) await draft.eraseContextTokenRanges([{ start: shared, end: draft.nextTokenIndex }]);
  if (shared < tokens.length - 1) await draft.evaluateWithoutGeneratingNewTokens(tokens.slice(shared, -1));
}

/**
 * Up to `count` proposals of the caught-up draft after `last` (the target's pending token), greedy or, with
 * `sampling`, drawn from the draft's distribution (kept with each proposal for its judgement), stopping where the
 * draft's best token is unlikely.
 */
async function propose(parts: SpeculativeParts, last: Token, count: number, sampling?: SamplerOptions): Promise<Proposal[]> {
  const { draft } = parts;
  if (count <= 0) return [];
  const proposals: Proposal[] = [];
  // A greedy draft's distribution is not needed (its candidates are the whole vocabulary): the best token's confidence is.
  const metadata = { confidence: true, probabilities: sampling !== undefined } as const;
  for await (const step of draft.evaluateWithMetadata([last], metadata, { ...(sampling ?? { temperature: 0 }), yieldEogToken: true })) {
    const q = sampling ? (step as { probabilities?: Map<Token, number> }).probabilities : undefined;
    if ((q ? best(q) : step.confidence) < DRAFT_MIN_CONFIDENCE) break;
    proposals.push({ token: step.token, q });
    if (proposals.length >= count || parts.model.isEogToken(step.token)) break;
  }
  return proposals;
}

/** The highest probability of a distribution. */
function best(probabilities: ReadonlyMap<Token, number>): number {
  let most = 0;
  for (const probability of probabilities.values()) most = Math.max(most, probability);
  return most;
}

/**
 * The target's own token loop for `count` tokens after `pending`: the prompt's first token, a step whose draft
 * proposed nothing, or a stretch where drafting does not pay (timed per token for the draft length). Returns the
 * last token, not yet evaluated, or undefined when generation ended.
 */
async function* alone(
  target: LlamaContextSequence,
  pending: Token[],
  parts: SpeculativeParts,
  options: SamplerOptions,
  count: number,
): AsyncGenerator<SpeculativeStep, Token | undefined> {
  let generated = 0;
  const started = performance.now();
  for await (const step of target.evaluateWithMetadata(pending, {}, options)) {
    yield step;
    if (++generated < count) continue;
    // Timed only for a stretch of its own: a prompt's first token or a lone token after an unsure draft says little.
    if (count === ALONE_TOKENS) parts.length.wentAlone(generated, performance.now() - started);
    return step.token;
  }
  return undefined;
}

/** Proposals that fit: the target's cache must hold its pending token, the proposals and the token after them. */
function room(target: LlamaContextSequence, wanted: number): number {
  return Math.min(wanted, target.context.contextSize - target.nextTokenIndex - 2);
}

/**
 * A seed per step: controlledEvaluate and each stretch of the target's own loop start a fresh sampler, and one seeded
 * alike every step would draw the same random numbers each time (seeded requests are not drafted: draftFor).
 */
function stepSeeds(): () => number {
  let next = Math.floor(Math.random() * 2 ** 32);
  return () => (next = (next + 0x9e3779b9) >>> 0);
}

function toSample(next: { token?: Token | null; probabilities?: Map<Token, number> } | undefined): TargetSample {
  if (next?.token === undefined || next.token === null) throw new Error("Failed to sample the next token");
  return { token: next.token, probabilities: next.probabilities };
}

/** A model's draft sequences, paired with its slots' sequences. */
export interface Drafts {
  sequences: Map<LlamaContextSequence, LlamaContextSequence>;
  length: DraftLength;
  /** Whether at most one sequence of the context is generating. */
  alone(): boolean;
}

/**
 * The parts of a drafted request, or undefined for one the draft cannot serve exactly: a grammar (controlledEvaluate
 * takes none), repetition penalties (node-llama-cpp reads their history once per evaluation, so drafted positions
 * would be penalised without the tokens before them), or a seed at a temperature above 0 (whether a step drafts
 * depends on timing, and the random numbers each sample draws with it: the same seed must give the same text).
 */
export function draftFor(drafts: Drafts | undefined, model: LlamaModel, target: LlamaContextSequence, options: SequenceEvaluateOptions): SpeculativeParts | undefined {
  const draft = drafts?.sequences.get(target);
  const seeded = (options.temperature ?? 0) > 0 && options.seed !== undefined;
  if (!drafts || !draft || options.grammarEvaluationState || options.repeatPenalty || seeded || options.yieldEogToken) return undefined;
  return { model, draft, length: drafts.length, alone: drafts.alone, usage: { drafted: 0, accepted: 0 } };
}
