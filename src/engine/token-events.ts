/**
 * From sampled tokens to events, the same for every local backend: the start event with real usage, incremental
 * detokenisation, stop sequences, reasoning and tool-call parsing and blocks (OutputAssembler), the output budget, and the finish
 * event with the reason. The backend only supplies tokens and says when it stopped early (abort).
 */
import type { CacheTier, DraftUsage, FinishReason, GenerationEvent, PromptTokenLogprob, TokenLogprob, Usage } from "./events.js";
import type { GenerationPlan } from "./generation-plan.js";
import type { IdFactory } from "../lib/ids.js";
import { OutputAssembler } from "./text/output-assembler.js";
import { TokenTextDecoder } from "./text/token-text-decoder.js";
import type { Vocabulary } from "./text/vocabulary.js";

/** What one token produced, and whether generation ends with it (and why). */
export interface TokenOutcome { events: GenerationEvent[]; finished?: FinishReason }

export class TokenEvents {
  private readonly usage: Usage;
  private readonly assembler: OutputAssembler;
  private readonly decoder: TokenTextDecoder;
  /** Tokens generated so far (for repetition penalties). */
  readonly output: number[] = [];

  constructor(private readonly plan: GenerationPlan, vocabulary: Pick<Vocabulary, "detokenize">, ids: IdFactory, cachedInputTokens = 0, cacheTier?: CacheTier) {
    this.usage = { inputTokens: plan.prompt.length, cachedInputTokens, outputTokens: 0, ...(cacheTier ? { cacheTier } : {}), ...(plan.reasoning ? { reasoningTokens: 0 } : {}) };
    this.assembler = new OutputAssembler({ stop: plan.stop, tools: plan.tools, reasoning: plan.reasoning, ids });
    this.decoder = new TokenTextDecoder(vocabulary);
  }

  /** The start event; a plan that echoes its prompt carries it, with `promptLogprobs` when those were owed. */
  start(promptLogprobs?: PromptTokenLogprob[]): GenerationEvent {
    const { inputTokens, cachedInputTokens, cacheTier } = this.usage;
    const echo = this.plan.echo && { text: this.plan.echo.text, ...(promptLogprobs ? { logprobs: promptLogprobs } : {}) };
    return { type: "start", model: this.plan.modelId, inputTokens, cachedInputTokens, ...(cacheTier ? { cacheTier } : {}), ...(echo ? { echo } : {}) };
  }

  /**
   * The token the output must take next, if any: once a think block has spent its budget, the tokens that close it,
   * one per step (each one pushed counts as reasoning, so the count past the budget says which is next).
   */
  forcedToken(): number | undefined {
    const budget = this.plan.reasoning?.budget;
    if (!budget || !this.assembler.thinking) return undefined;
    const next = this.usage.reasoningTokens! - budget.tokens;
    return next >= 0 ? budget.close[next] : undefined;
  }

  /** A sampled token (an end-of-generation token is not pushed: the backend finishes with "stop"). */
  push(token: number, logprobs?: TokenLogprob[]): TokenOutcome {
    this.output.push(token);
    this.usage.outputTokens++;
    // A token that arrives inside a think block is reasoning, the one that closes the block included.
    if (this.assembler.thinking) this.usage.reasoningTokens!++;
    const { events, done } = this.assembler.push(this.decoder.push(token), logprobs);
    if (done) return { events, finished: this.assembler.stopSequence === undefined ? "tool-calls" : "stop-sequence" };
    return { events, finished: this.usage.outputTokens >= this.plan.maxTokens ? "length" : undefined };
  }

  /**
   * The closing events for `reason`: held-back text (unless a stop sequence or the one tool call ended it), then
   * finish, whose usage includes `draft` when a draft model proposed tokens.
   */
  finish(reason: FinishReason, draft?: DraftUsage): GenerationEvent[] {
    const events: GenerationEvent[] = [];
    if (reason !== "stop-sequence" && reason !== "tool-calls") events.push(...this.assembler.push(this.decoder.flush()).events);
    events.push(...this.assembler.finish());
    const usage = draft ? { ...this.usage, draft } : this.usage;
    // Any tool call makes the reason "tool-calls", unless aborted, or cut off by the token limit (as the hosted APIs
    // do: the client retries with more tokens rather than run a call with half its arguments). The stop sequence is
    // named when one ended it.
    const cutByLimit = reason === "length" && this.assembler.cutCall;
    if (reason !== "aborted" && !cutByLimit && this.assembler.completedCalls > 0) events.push({ type: "finish", reason: "tool-calls", usage });
    else if (reason === "stop-sequence") events.push({ type: "finish", reason, stopSequence: this.assembler.stopSequence, usage });
    else events.push({ type: "finish", reason, usage });
    return events;
  }
}
