/**
 * GBNF grammars compiled and evaluated by llama.cpp's own grammar engine (through node-llama-cpp), for every local
 * backend: the llama.cpp backend hands the evaluation state to its sampler; a backend that samples itself (WebGPU)
 * asks the same state whether a token may come next and feeds it the tokens it picks. A vocabulary-only model
 * (no weights) is enough, since a grammar only needs each token's text.
 */
import { LlamaGrammarEvaluationState, type Llama, type LlamaModel } from "node-llama-cpp";
import { EngineError } from "../../errors/engine-error.js";

/** A grammar's evaluation state over a vocabulary, for a sampler that is not llama.cpp's. */
export interface TokenGrammar {
  /** Whether `token` may come next (an end-of-generation token: only where the grammar may end). */
  accepts(token: number): boolean;
  /** Advances past `token`, which must have been accepted (end-of-generation tokens are not fed). */
  accept(token: number): void;
}

/** Compiles `grammar`; a grammar llama.cpp rejects is the client's invalid request, naming the field it came from. */
export async function compileGrammarState(llama: Llama, model: LlamaModel, grammar: { text: string; param: string }): Promise<LlamaGrammarEvaluationState> {
  try {
    const compiled = await llama.createGrammar({ grammar: grammar.text });
    return new LlamaGrammarEvaluationState({ model, grammar: compiled });
  } catch (error) {
    const cause = error instanceof Error ? error.message : String(error);
    throw new EngineError("invalid_request", `${grammar.param}: cannot be enforced as a grammar (${cause})`, { param: grammar.param }, { cause: error });
  }
}

/** The two native calls node-llama-cpp's own samplers use on a grammar state (not part of its public API). */
interface GrammarBindings {
  canBeNextTokenForGrammarEvaluationState(state: unknown, token: number): boolean;
  acceptGrammarEvaluationStateToken(state: unknown, token: number): void;
}

/** Wraps an evaluation state: one native call per question, the same ones node-llama-cpp's sampler makes. */
export function tokenGrammarOf(state: LlamaGrammarEvaluationState): TokenGrammar {
  const internal = state as unknown as { _llama: { _bindings: { AddonSampler: GrammarBindings } }; _state: unknown };
  const bindings = internal._llama._bindings.AddonSampler;
  return {
    accepts: (token) => bindings.canBeNextTokenForGrammarEvaluationState(internal._state, token),
    accept: (token) => bindings.acceptGrammarEvaluationStateToken(internal._state, token),
  };
}
