/**
 * The token loop of the WebGPU backend: evaluate the prompt suffix the cache lacks (in batches), then sample token by token
 * (GPU argmax when greedy, else the CPU sampler on read-back logits, which also applies the plan's grammar, or on the
 * best candidates a GPU selected for plain top-k sampling) until end
 * of generation, a stop sequence, the budget or an abort. Events come from the engine's shared TokenEvents, exactly as on llama.cpp.
 */
import { EngineError } from "../../../errors/engine-error.js";
import type { FinishReason, GenerationEvent } from "../../events.js";
import type { GenerationPlan } from "../../generation-plan.js";
import { TokenEvents } from "../../token-events.js";
import type { TokenGrammar } from "../../text/token-grammar.js";
import type { Vocabulary } from "../../text/vocabulary.js";
import type { IdFactory } from "../../../lib/ids.js";
import type { DecodeSession } from "./decode-session.js";
import { createSampler, logprobsOf } from "./sampler.js";

export async function* runWebGpuGeneration(
  session: DecodeSession,
  plan: GenerationPlan,
  deps: { vocabulary: Vocabulary; ids: IdFactory; compileGrammar(grammar: { text: string; param: string }): Promise<TokenGrammar> },
  signal?: AbortSignal,
): AsyncGenerator<GenerationEvent> {
  throwIfAborted(signal);
  if (plan.echo?.logprobs) throw new EngineError("invalid_request", "echo: the webgpu backend cannot score prompt tokens; ask for echo or logprobs, not both", { param: "echo" });
  const sampler = createSampler(plan.sampling);
  const grammar = plan.grammar ? { rules: await deps.compileGrammar(plan.grammar), vocabularySize: deps.vocabulary.size } : undefined;
  const logprobs = plan.logprobs;
  const onCpu = !sampler.usesGpuArgmax || grammar !== undefined;
  // What each step reads back: the id alone (greedy on the GPU), only the best candidates (plain top-k sampling),
  // or the whole row (grammars, penalties, logprobs, no top-k).
  const fromTop = sampler.needsOnlyTop && grammar === undefined && logprobs === undefined;
  const want = fromTop ? "top" : onCpu || logprobs !== undefined ? "logits" : "id";
  const reused = session.reuse(plan.prompt);
  const tokens = new TokenEvents(plan, deps.vocabulary, deps.ids, reused);
  // The prompt's uncached tokens but the last go through in batches; the last one's step gives the first token.
  await session.prefill(plan.prompt.slice(reused, -1));
  throwIfAborted(signal);
  let step = await session.feed(plan.prompt.at(-1)!, want);
  yield tokens.start();
  let reason: FinishReason = "stop";
  for (;;) {
    if (signal?.aborted) { reason = "aborted"; break; }
    // The sampler applies penalties to the logits in place; logprobs describe the model's own distribution.
    const raw = logprobs !== undefined ? step.logits!.slice() : undefined;
    const token = tokens.forcedToken() ?? (!onCpu ? step.token : step.top ? sampler.pickFrom(step.top) : sampler.pick(step.logits!, [...plan.prompt, ...tokens.output], grammar));
    if (deps.vocabulary.isEog(token) && !plan.sampling?.ignoreEos) break;
    grammar?.rules.accept(token);
    const alternatives = raw ? [logprobsOf(raw, token, logprobs ?? 0, (id) => deps.vocabulary.detokenize([id], false))] : undefined;
    const { events, finished } = tokens.push(token, alternatives);
    yield* events;
    if (finished) { reason = finished; break; }
    step = await session.feed(token, want);
  }
  yield* tokens.finish(reason);
}

function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new EngineError("aborted", "The request was aborted");
}
