/**
 * The generation loop on node-llama-cpp's low-level sequence API: take the best slot, evaluate only the prompt
 * suffix the cache lacks, then sample token by token — checking the abort signal every token, cutting stop
 * sequences, parsing tool calls — and free the slot in `finally`, whatever happens. The token loop runs ahead of the
 * reader into a small event buffer and keeps in step with the context's other sequences through the decode barrier,
 * so they share decode batches and a slow reader holds up no one else.
 */
import { LlamaGrammarEvaluationState, type Llama, type LlamaModel, type Token } from "node-llama-cpp";
import { EngineError, toEngineError } from "../../errors.js";
import type { FinishReason, GenerationEvent, TokenLogprob } from "../../events.js";
import type { GenerationPlan } from "../../generation-plan.js";
import { TokenEvents } from "../../token-events.js";
import type { Vocabulary } from "../../text/vocabulary.js";
import type { IdFactory } from "../../../lib/ids.js";
import type { DecodeBarrier } from "./decode-barrier.js";
import { EventBuffer } from "./event-buffer.js";
import { toEvaluateOptions } from "./sampling.js";
import type { SlotLease, SlotPool } from "./slot-pool.js";

/** What the loop needs from the loaded model. */
export interface GenerationRuntime {
  llama: Llama;
  model: LlamaModel;
  vocabulary: Vocabulary;
  pool: SlotPool;
  ids: IdFactory;
  /** Keeps the context's generating sequences in step; absent: each asks for its tokens on its own. */
  barrier?: DecodeBarrier;
}

/** Events a reader may lag behind before the token loop pauses (and leaves the barrier meanwhile). */
const BUFFERED_EVENTS = 16;

/** Runs one plan. Throws (before `start`) for an abort while waiting or a grammar that does not compile. */
export async function* runGeneration(runtime: GenerationRuntime, plan: GenerationPlan, signal?: AbortSignal): AsyncGenerator<GenerationEvent> {
  throwIfAborted(signal);
  const grammarState = plan.grammar ? await compileGrammar(runtime, plan.grammar) : undefined;
  const lease = await runtime.pool.acquire(plan.prompt as Token[], signal);
  const buffer = new EventBuffer<GenerationEvent>(BUFFERED_EVENTS);
  let production = Promise.resolve();
  try {
    throwIfAborted(signal);
    production = decodeTokens(runtime, plan, lease, grammarState, signal, buffer).then(() => buffer.end(), (error: unknown) => buffer.end({ error }));
    yield* buffer.drain();
  } finally {
    // A reader that stops early closes the buffer: the loop sees it at its next token and ends like an abort.
    buffer.close();
    await production;
    lease.release();
  }
}

async function decodeTokens(
  runtime: GenerationRuntime,
  plan: GenerationPlan,
  lease: SlotLease,
  grammarState: LlamaGrammarEvaluationState | undefined,
  signal: AbortSignal | undefined,
  out: EventBuffer<GenerationEvent>,
): Promise<void> {
  const tokens = new TokenEvents(plan, runtime.vocabulary, runtime.ids, lease.reusedTokens, lease.cacheTier);
  out.push(tokens.start());
  const options = toEvaluateOptions(plan.sampling, () => [...plan.prompt, ...tokens.output] as Token[], grammarState);
  const wantLogprobs = (plan.logprobs ?? 0) > 0;
  const pacer = new StepPacer(runtime.barrier, out);
  let reason: FinishReason = "stop";
  try {
    const steps = lease.sequence.evaluateWithMetadata(plan.prompt.slice(lease.reusedTokens) as Token[], { confidence: wantLogprobs, probabilities: wantLogprobs }, options);
    for await (const step of steps) {
      if (signal?.aborted || out.closed) { reason = "aborted"; break; }
      const logprobs = wantLogprobs ? [toLogprob(runtime.model, step, plan.logprobs ?? 0)] : undefined;
      const { events, finished } = tokens.push(step.token, logprobs);
      for (const event of events) out.push(event);
      if (finished) { reason = finished; break; }
      await pacer.beforeNextToken();
    }
  } catch (error) {
    out.push({ type: "error", error: toEngineError(error, "backend_failure") });
    return;
  } finally {
    pacer.stop();
  }
  for (const event of tokens.finish(reason)) out.push(event);
}

/**
 * One sequence's place at the decode barrier: a member from its first token until it stops, stepping out while its
 * reader lags a full buffer behind (so the others go on without it) and back in once the reader catches up.
 */
class StepPacer {
  private joined = false;

  constructor(private readonly barrier: DecodeBarrier | undefined, private readonly out: EventBuffer<GenerationEvent>) {}

  async beforeNextToken(): Promise<void> {
    if (this.out.full) {
      this.stop();
      await this.out.waitForRoom();
    }
    if (!this.barrier) return;
    if (!this.joined) {
      this.barrier.join();
      this.joined = true;
    }
    await this.barrier.arrive();
  }

  stop(): void {
    if (this.joined) this.barrier?.leave();
    this.joined = false;
  }
}

/** node-llama-cpp exposes the sampled token's probability and the (sorted) candidate distribution. */
function toLogprob(model: LlamaModel, step: { token: Token; confidence?: number; probabilities?: Map<Token, number> }, top: number): TokenLogprob {
  const alternatives = [...(step.probabilities ?? new Map<Token, number>()).entries()].slice(0, top);
  return {
    token: model.detokenize([step.token], false),
    logprob: Math.log(step.confidence ?? step.probabilities?.get(step.token) ?? 0),
    top: alternatives.map(([token, probability]) => ({ token: model.detokenize([token], false), logprob: Math.log(probability) })),
  };
}

async function compileGrammar(runtime: GenerationRuntime, grammar: { text: string; param: string }): Promise<LlamaGrammarEvaluationState> {
  try {
    const compiled = await runtime.llama.createGrammar({ grammar: grammar.text });
    return new LlamaGrammarEvaluationState({ model: runtime.model, grammar: compiled });
  } catch (error) {
    const cause = error instanceof Error ? error.message : String(error);
    throw new EngineError("invalid_request", `${grammar.param}: cannot be enforced as a grammar (${cause})`, { param: grammar.param }, { cause: error });
  }
}

function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new EngineError("aborted", "The request was aborted");
}
