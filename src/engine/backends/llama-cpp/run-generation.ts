/**
 * The generation loop on node-llama-cpp's low-level sequence API: take the best slot, evaluate only the prompt
 * suffix the cache lacks, then sample token by token — checking the abort signal every token, cutting stop
 * sequences, parsing tool calls — and free the slot in `finally`, whatever happens.
 */
import { LlamaGrammarEvaluationState, type Llama, type LlamaModel, type Token } from "node-llama-cpp";
import { EngineError, toEngineError } from "../../errors.js";
import type { FinishReason, GenerationEvent, TokenLogprob, Usage } from "../../events.js";
import type { SamplingOptions } from "../../messages.js";
import type { IdFactory } from "../../../lib/ids.js";
import { OutputAssembler, type ToolParsing } from "./output-assembler.js";
import { toEvaluateOptions } from "./sampling.js";
import type { SlotLease, SlotPool } from "./slot-pool.js";
import { TokenTextDecoder } from "./token-text-decoder.js";

/** One request, reduced to tokens and limits. */
export interface GenerationPlan {
  modelId: string;
  prompt: Token[];
  /** Already clamped to the context left after the prompt. */
  maxTokens: number;
  sampling?: SamplingOptions;
  stop: string[];
  /** GBNF constraining the output, and the request field it came from (for error messages). */
  grammar?: { text: string; param: string };
  tools?: ToolParsing;
  /** Top alternatives to report per generated token (0 or undefined: none). */
  logprobs?: number;
}

/** What the loop needs from the loaded model. */
export interface GenerationRuntime {
  llama: Llama;
  model: LlamaModel;
  pool: SlotPool;
  ids: IdFactory;
}

/** Runs one plan. Throws (before `start`) for an abort while waiting or a grammar that does not compile. */
export async function* runGeneration(runtime: GenerationRuntime, plan: GenerationPlan, signal?: AbortSignal): AsyncGenerator<GenerationEvent> {
  throwIfAborted(signal);
  const grammarState = plan.grammar ? await compileGrammar(runtime, plan.grammar) : undefined;
  const lease = await runtime.pool.acquire(plan.prompt);
  try {
    throwIfAborted(signal);
    yield* decodeTokens(runtime, plan, lease, grammarState, signal);
  } finally {
    lease.release();
  }
}

async function* decodeTokens(
  runtime: GenerationRuntime,
  plan: GenerationPlan,
  lease: SlotLease,
  grammarState: LlamaGrammarEvaluationState | undefined,
  signal: AbortSignal | undefined,
): AsyncGenerator<GenerationEvent> {
  const usage: Usage = { inputTokens: plan.prompt.length, cachedInputTokens: lease.reusedTokens, outputTokens: 0 };
  yield { type: "start", model: plan.modelId, inputTokens: usage.inputTokens, cachedInputTokens: usage.cachedInputTokens };
  const assembler = new OutputAssembler({ stop: plan.stop, tools: plan.tools, ids: runtime.ids });
  const decoder = new TokenTextDecoder(runtime.model);
  const output: Token[] = [];
  const options = toEvaluateOptions(plan.sampling, () => [...plan.prompt, ...output], grammarState);
  const wantLogprobs = (plan.logprobs ?? 0) > 0;
  let reason: FinishReason = "stop";
  try {
    const steps = lease.sequence.evaluateWithMetadata(plan.prompt.slice(lease.reusedTokens), { confidence: wantLogprobs, probabilities: wantLogprobs }, options);
    for await (const step of steps) {
      if (signal?.aborted) { reason = "aborted"; break; }
      output.push(step.token);
      usage.outputTokens++;
      const logprobs = wantLogprobs ? [toLogprob(runtime.model, step, plan.logprobs ?? 0)] : undefined;
      const { events, done } = assembler.push(decoder.push(step.token), logprobs);
      yield* events;
      if (done) { reason = assembler.stopSequence === undefined ? "tool-calls" : "stop-sequence"; break; }
      if (usage.outputTokens >= plan.maxTokens) { reason = "length"; break; }
    }
  } catch (error) {
    yield { type: "error", error: toEngineError(error, "backend_failure") };
    return;
  }
  // After a stop sequence or the one allowed tool call, anything still held back is past the end.
  if (reason !== "stop-sequence" && reason !== "tool-calls") yield* assembler.push(decoder.flush()).events;
  yield* assembler.finish();
  yield finishEvent(reason, assembler, usage);
}

/** Any completed tool call makes the reason "tool-calls" (unless aborted); the stop sequence is named when one ended it. */
function finishEvent(reason: FinishReason, assembler: OutputAssembler, usage: Usage): GenerationEvent {
  if (reason !== "aborted" && assembler.completedCalls > 0) return { type: "finish", reason: "tool-calls", usage };
  if (reason === "stop-sequence") return { type: "finish", reason, stopSequence: assembler.stopSequence, usage };
  return { type: "finish", reason, usage };
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
