/**
 * The token loop of a sequence with plain sampling, on node-llama-cpp's batch queue without its sampler layer.
 *
 * node-llama-cpp's evaluation loop, for every token of every sequence, takes the sequence's lock, resolves a sampler
 * configuration, takes the sampler's lock and applies the configuration to its native sampler, all before a
 * sampleToken that the step sampler would then take over: host work paid once per sequence per step, which on a GPU
 * is most of the host's share of a step with many streams (with this loop and the step sampler's faster scans that
 * share fell from 11.6 to 8.7 ms at 64 streams and from 5.5 to 3.9 ms at 32 on an H200).
 * Here each token goes into the same queue (so it shares its step's batch with the other sequences' tokens and prompt
 * chunks, and node-llama-cpp keeps the sequence's tokens and position) and its output row goes straight to the step
 * sampler. The sequence's lock is not taken: the slot pool lends the sequence to this generation alone.
 */
import type { LlamaContextSequence, LlamaModel, Token } from "node-llama-cpp";
import type { PlainSampling, StepSampler } from "./step-sampler.js";

/** node-llama-cpp's default evaluation priority (every kiln evaluation uses it). */
const EVALUATION_PRIORITY = 5;

/** The internals of a node-llama-cpp 3.x sequence the loop uses (those its own evaluation loop uses). */
interface SequenceInternals {
  _decodeTokens(
    tokens: Token[],
    logits: boolean[],
    evaluationPriority: number,
    tokenMeter: unknown,
    contextShiftOptions: unknown,
    logitDataMapper: (batchLogitIndex: number) => Promise<number>,
    afterBatchAction?: (sequenceStateLength: number) => unknown,
  ): Promise<Array<number | undefined>>;
  _tokenMeter: unknown;
  _contextShift: unknown;
  _tokenPredictor?: unknown;
  _takeIntervalCheckpointIfNeededAfterBatch?: (sequenceStateLength: number) => unknown;
  _sequenceId: number;
  _nextTokenIndex: number;
  _contextTokens: Token[];
  _context: ContextInternals;
}

/** The context's queue, which the sequence's `_decodeTokens` wraps. */
interface ContextInternals {
  contextSize: number;
  _decodeTokens(
    decode: {
      sequenceId: number;
      tokens: Token[];
      firstTokenSequenceIndex: number;
      logits: boolean[];
      evaluationPriority: number;
      tokenMeter: unknown;
      afterBatchAction?: (sequenceStateLength: number) => unknown;
    },
    logitDataMapper: (batchLogitIndex: number) => Promise<number>,
  ): Promise<Array<[contextIndex: number, value: number | undefined]>>;
}

/** A generated token, as node-llama-cpp's loop yields it. */
export interface LoopToken {
  token: Token;
}

/**
 * Evaluates `tokens` on `sequence` and then generates token after token until an end-of-generation token (not
 * yielded; with `pastEog`, yielded and generation goes on) or until the caller stops reading. Undefined where the
 * installed node-llama-cpp lacks the internals used or the sequence predicts tokens: the caller then runs
 * node-llama-cpp's own loop.
 */
export function plainTokenLoop(
  sequence: LlamaContextSequence,
  model: LlamaModel,
  tokens: Token[],
  sampler: StepSampler,
  sampling: PlainSampling,
  pastEog = false,
): AsyncIterable<LoopToken> | undefined {
  const internals = internalsOf(sequence);
  return internals && loop(internals, (token) => !pastEog && model.isEogToken(token), tokens, sampler, sampling);
}

/** The sequence's internals, or undefined where the installed node-llama-cpp lacks them or the sequence predicts tokens. */
function internalsOf(sequence: LlamaContextSequence): SequenceInternals | undefined {
  const internals = sequence as unknown as Partial<SequenceInternals>;
  if (typeof internals._decodeTokens !== "function" || internals._contextShift === undefined || internals._tokenPredictor != null) return undefined;
  if (typeof internals._context?._decodeTokens !== "function" || !Array.isArray(internals._contextTokens) || typeof internals._nextTokenIndex !== "number") return undefined;
  return internals as SequenceInternals;
}

/**
 * Evaluates a prompt chunk on `sequence` without sampling, through the same queue as its token loop and without
 * node-llama-cpp's evaluation loop (its lock, a sampler made and disposed for every chunk): on an H200 the host's gap
 * between two chunks of a long prompt was 1.4 ms in kiln against 0.35 ms in node-llama-cpp's own loop of batches.
 */
export async function evaluatePromptChunk(sequence: LlamaContextSequence, tokens: Token[]): Promise<void> {
  const internals = internalsOf(sequence);
  if (!internals) {
    await sequence.evaluateWithoutGeneratingNewTokens(tokens);
    return;
  }
  await decode(internals, tokens, [], noSampling);
}

/** A chunk asks for no output row, so nothing is ever sampled for it. */
const noSampling = (): Promise<number> => Promise.resolve(-1);

/**
 * Queues `tokens` as node-llama-cpp's own loop does, with its checkpoints for models that need them (recurrent or
 * sliding-window caches); `sample` gives the token for each row asked for in `logits`. Where the tokens fit the
 * sequence, they go to the context's queue directly and are appended to the sequence's token list in place: the
 * sequence's own `_decodeTokens` copies that whole list for every token (`concat`), which at a coding agent's 19,000
 * tokens is 150 KB allocated outside V8's young generation, and took the host's time per token from 0.65 to 1.0–1.4
 * ms on 2 CPU cores (bench/results/2026-11-27-vm-deep-context-host.md). A sequence that must shift its context goes
 * through node-llama-cpp's own path.
 */
function decode(sequence: SequenceInternals, tokens: Token[], logits: boolean[], sample: (batchLogitIndex: number) => Promise<number>): Promise<Array<number | undefined>> {
  const afterBatchAction = sequence._takeIntervalCheckpointIfNeededAfterBatch?.bind(sequence);
  const start = sequence._nextTokenIndex;
  const context = sequence._context;
  if (context.contextSize - 1 - start < tokens.length) {
    return sequence._decodeTokens(tokens, logits, EVALUATION_PRIORITY, sequence._tokenMeter, sequence._contextShift, sample, afterBatchAction);
  }
  return context._decodeTokens({
    sequenceId: sequence._sequenceId, tokens, firstTokenSequenceIndex: start, logits, evaluationPriority: EVALUATION_PRIORITY,
    tokenMeter: sequence._tokenMeter, afterBatchAction,
  }, sample).then((generated) => {
    const outputs: Array<number | undefined> = [];
    for (const [index, value] of generated) outputs[index - start] = value;
    sequence._nextTokenIndex = start + tokens.length;
    for (const token of tokens) sequence._contextTokens.push(token);
    return outputs;
  });
}

const DONE = { done: true, value: undefined } as const;

/**
 * The token loop as a plain iterator (each `next()` decodes the token before and samples the next one): an async
 * generator would add several promises to every token.
 */
function loop(sequence: SequenceInternals, ends: (token: Token) => boolean, tokens: Token[], sampler: StepSampler, sampling: PlainSampling): AsyncIterable<LoopToken> {
  // The generation's random state lives with this object.
  const owner = {};
  const sample = (batchLogitIndex: number) => sampler.sample(batchLogitIndex, sampling, owner);
  let evaluate = tokens;
  // As node-llama-cpp's loop: nothing to evaluate, nothing to sample.
  let over = evaluate.length === 0;
  const sampled = (decoded: Array<number | undefined>): IteratorResult<LoopToken> => {
    const token = decoded[evaluate.length - 1];
    if (token === undefined || token === -1) return failed(new Error("Failed to sample the next token"));
    if (ends(token as Token)) {
      over = true;
      return DONE;
    }
    evaluate = [token as Token];
    return { done: false, value: { token: token as Token } };
  };
  const failed = (error: unknown): never => {
    over = true;
    throw error;
  };
  const iterator: AsyncIterator<LoopToken> = {
    next: () => {
      if (over) return Promise.resolve(DONE);
      const logits: boolean[] = [];
      logits[evaluate.length - 1] = true;
      return decode(sequence, evaluate, logits, sample).then(sampled, failed);
    },
    return: () => {
      over = true;
      return Promise.resolve(DONE);
    },
  };
  return { [Symbol.asyncIterator]: () => iterator };
}
