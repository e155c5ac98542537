/**
 * The generation loop on node-llama-cpp's low-level sequence API: take the best slot, evaluate only the prompt
 * suffix the cache lacks, in chunks that share decode steps with the other sequences (checking the abort signal
 * between chunks, and stopping a step that only this request's tokens are in when it is abandoned), then sample token
 * by token — checking the abort signal every token, cutting stop
 * sequences, parsing tool calls — and free the slot in `finally`, whatever happens. The token loop runs ahead of the
 * reader into a small event buffer and keeps in step with the context's other sequences through the decode barrier,
 * so they share decode batches and a slow reader holds up no one else.
 */
import type { Llama, LlamaGrammarEvaluationState, LlamaModel, Token } from "node-llama-cpp";
import { EngineError, toEngineError } from "../../../errors/engine-error.js";
import type { FinishReason, GenerationEvent } from "../../events.js";
import { scorePrompt, toLogprob } from "./logprobs.js";
import type { GenerationPlan } from "../../generation-plan.js";
import { TokenEvents } from "../../token-events.js";
import { compileGrammarState } from "../../text/token-grammar.js";
import type { Vocabulary } from "../../text/vocabulary.js";
import type { IdFactory } from "../../../lib/ids.js";
import type { DecodeBarrier } from "./decode-barrier.js";
import { EventBuffer } from "./event-buffer.js";
import { StepPacer } from "./step-pacer.js";
import { WHOLE_PROMPT_TOKENS, type StepPlanner } from "./step-planner.js";
import { plainSampling, toEvaluateOptions } from "./sampling.js";
import { evaluatePromptChunk, plainTokenLoop } from "./plain-token-loop.js";
import type { StepSampler } from "./step-sampler.js";
import type { ReaderWakes } from "./reader-wakes.js";
import type { SlotLease, SlotPool } from "./slot-pool.js";
import type { StepInterrupter } from "./step-interrupter.js";
import { LANE_MIN_TOKENS, type PrefillLane } from "./prefill-lane.js";
import { draftFor, speculate, type Drafts } from "./speculative-decode.js";
import { lazyIterable } from "../../../lib/lazy-iterable.js";

/** What the loop needs from the loaded model. */
export interface GenerationRuntime {
  llama: Llama;
  model: LlamaModel;
  vocabulary: Vocabulary;
  pool: SlotPool;
  ids: IdFactory;
  /** Keeps the context's generating sequences in step; absent: each asks for its tokens on its own. */
  barrier?: DecodeBarrier;
  /** Decides how many prompt tokens join each step; absent: the prompt is queued whole. */
  planner?: StepPlanner;
  /** Stops the decode step in flight of an abandoned request; absent: steps always run to their end. */
  steps?: StepInterrupter;
  /** Evaluates long prompts beside the generating sequences; absent: in chunks inside their steps. */
  lane?: PrefillLane;
  /** A draft model's sequences, one per slot (speculative decoding); absent: each token is the target's alone. */
  drafts?: Drafts;
  /** Samples a step's sequences in one native call; absent: each through node-llama-cpp. */
  sampler?: StepSampler;
  /** Wakes the readers of events once the next step is under way (every layer on a GPU); absent: at once. */
  readers?: ReaderWakes;
}

/** Events a reader may lag behind before the token loop pauses (and leaves the barrier meanwhile). */
const BUFFERED_EVENTS = 16;

/** Runs one plan. Rejects the first `next()` (before `start`) for an abort while waiting or a grammar that does not compile. */
export function runGeneration(runtime: GenerationRuntime, plan: GenerationPlan, signal?: AbortSignal): AsyncIterable<GenerationEvent> {
  return lazyIterable(async () => {
    throwIfAborted(signal);
    const grammarState = plan.grammar ? await compileGrammarState(runtime.llama, runtime.model, plan.grammar) : undefined;
    const lease = await runtime.pool.acquire(plan.prompt as Token[], signal);
    if (signal?.aborted) {
      lease.release();
      throwIfAborted(signal);
    }
    const buffer = new EventBuffer<GenerationEvent>(BUFFERED_EVENTS, runtime.readers && ((reader) => runtime.readers?.wake(reader)));
    // Aborted by the caller's signal, or by a reader that stops early.
    const abandoned = new AbortController();
    const abandon = () => abandoned.abort();
    signal?.addEventListener("abort", abandon);
    const production = decodeTokens(runtime, plan, lease, grammarState, abandoned.signal, buffer).then(() => buffer.end(), (error: unknown) => buffer.end({ error }));
    return buffer.drain(async () => {
      // A reader that stops early closes the buffer: the loop sees it at its next token and ends like an abort.
      buffer.close();
      abandon();
      await production;
      signal?.removeEventListener("abort", abandon);
      lease.release();
    });
  });
}

async function decodeTokens(
  runtime: GenerationRuntime,
  plan: GenerationPlan,
  lease: SlotLease,
  grammarState: LlamaGrammarEvaluationState | undefined,
  abandoned: AbortSignal,
  out: EventBuffer<GenerationEvent>,
): Promise<void> {
  // A failure here precedes `start`: the engine answers it with a real HTTP status.
  const scored = plan.echo?.logprobs ? await scorePrompt(runtime.model, lease.sequence, plan.prompt as Token[], plan.logprobs ?? 0) : undefined;
  // Scoring evaluated the whole prompt but its last token afresh: only that token is left to evaluate.
  let evaluated = scored ? plan.prompt.length - 1 : lease.reusedTokens;
  const tokens = new TokenEvents(plan, runtime.vocabulary, runtime.ids, scored ? 0 : lease.reusedTokens, scored ? undefined : lease.cacheTier);
  out.push(tokens.start(scored));
  const options = toEvaluateOptions(runtime.model, plan.sampling, () => [...plan.prompt, ...tokens.output] as Token[], grammarState, plan.reasoning?.budget && (() => tokens.forcedToken()));
  const top = plan.logprobs;
  // A think-block budget forces tokens by a bias the draft's proposals would not see; logprobs describe the model's
  // own distribution, which only node-llama-cpp's token loop reports (logprobs.ts).
  const draft = plan.reasoning?.budget || top !== undefined ? undefined : draftFor(runtime.drafts, runtime.model, lease.sequence, options);
  // Logprobs and drafts need node-llama-cpp's sampler (plainSampling turns away grammars, biases and penalties).
  const plain = runtime.sampler && top === undefined && !draft ? plainSampling(options, runtime.sampler.maxTopK) : undefined;
  const pacer = new StepPacer(runtime.barrier, out);
  let reason: FinishReason = "stop";
  const stopped = () => abandoned.aborted || out.closed;
  // Steps are interruptible once the first prompt chunk is in: a client that leaves at once still leaves that much
  // cached for its retry, and one that leaves later never waits for a whole chunk.
  let interruptible = false;
  const interrupt = () => { if (interruptible) runtime.steps?.abandon(lease.sequence); };
  const firstChunkDone = () => {
    interruptible = true;
    if (abandoned.aborted) interrupt();
  };
  abandoned.addEventListener("abort", interrupt);
  try {
    const laned = runtime.lane && plan.prompt.length - evaluated >= LANE_MIN_TOKENS
      ? await runtime.lane.prefill(lease.sequence, plan.prompt as Token[], abandoned, firstChunkDone) : undefined;
    evaluated = laned ?? evaluated;
    const prompt = plan.prompt.slice(evaluated) as Token[];
    // After the lane a client already gone gets no further chunk: its first chunk was the lane's.
    const chunked = runtime.planner && !(laned !== undefined && stopped()) ? await evaluateChunks(runtime.planner, lease, prompt, pacer, stopped, firstChunkDone) : 0;
    // A prompt that went whole into its first step (with its first token) is that first chunk: interruptible after it.
    if (chunked > 0 || laned !== undefined) firstChunkDone();
    const metadata = { confidence: top !== undefined, probabilities: (top ?? 0) > 0 };
    const rest = prompt.slice(chunked);
    const steps = stopped() ? undefined
      : draft ? speculate(lease.sequence, rest, draft, options)
      : (plain && plainTokenLoop(lease.sequence, runtime.model, rest, runtime.sampler!, plain, options.yieldEogToken)) || lease.sequence.evaluateWithMetadata(rest, metadata, options);
    if (!steps) reason = "aborted";
    for await (const step of steps ?? []) {
      if (!interruptible) firstChunkDone();
      if (stopped()) { reason = "aborted"; break; }
      const logprobs = top !== undefined ? [toLogprob(runtime.model, step, top)] : undefined;
      const { events, finished } = tokens.push(step.token, logprobs);
      for (const event of events) out.push(event);
      if (finished) { reason = finished; break; }
      const paced = pacer.beforeNextToken();
      if (paced) await paced;
    }
  } catch (error) {
    // A step stopped because this request was abandoned: what was evaluated before it stays in the sequence.
    if (!abandoned.aborted) {
      out.push({ type: "error", error: toEngineError(error, "backend_failure") });
      return;
    }
    reason = "aborted";
  } finally {
    abandoned.removeEventListener("abort", interrupt);
    runtime.steps?.forget(lease.sequence);
    pacer.stop();
  }
  for (const event of tokens.finish(reason, draft?.usage)) out.push(event);
}

/**
 * Evaluates all but the last chunk of `prompt` (nothing for a short prompt), each chunk the tokens the planner grants
 * this request in one decode step (none in a step whose budget went to older requests), and returns how many tokens
 * it evaluated (fewer when `stopped` turns true: the work stops after the chunk in progress, or after the first, and
 * what was evaluated stays in the sequence). The last chunk is evaluated with the first generated token.
 */
async function evaluateChunks(
  planner: StepPlanner,
  lease: SlotLease,
  prompt: Token[],
  pacer: StepPacer,
  stopped: () => boolean,
  onFirstChunk: () => void,
): Promise<number> {
  let done = 0;
  if (prompt.length <= WHOLE_PROMPT_TOKENS) return done;
  const ticket = planner.enqueue(prompt.length, lease.sequence.nextTokenIndex);
  pacer.startPrefill();
  try {
    // The first chunk is evaluated even for a client already gone, so its retry finds part of the prompt cached
    // (all but its last token when the whole prompt fits the step).
    while (!(done > 0 && stopped())) {
      const size = planner.take(ticket);
      const rest = prompt.length - done;
      if (size >= rest && !(done === 0 && stopped())) break;
      const chunk = Math.min(size, rest - 1);
      if (chunk > 0) {
        await evaluatePromptChunk(lease.sequence, prompt.slice(done, done + chunk));
        if (done === 0) onFirstChunk();
        done += chunk;
      }
      await pacer.arrive();
    }
  } finally {
    planner.finish(ticket);
    pacer.finishPrefill();
  }
  return done;
}

function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new EngineError("aborted", "The request was aborted");
}
