/**
 * Loads only a GGUF's vocabulary (no weights) through node-llama-cpp, for backends that run the weights themselves:
 * tokens, special tokens and chat template then match the llama.cpp backend's exactly, and grammars are compiled
 * and evaluated by the same llama.cpp grammar engine as on that backend.
 */
import { getLlama, LlamaLogLevel } from "node-llama-cpp";
import { EngineError } from "../../errors/engine-error.js";
import { compileGrammarState, tokenGrammarOf, type TokenGrammar } from "./token-grammar.js";
import { withRememberedBinaryChecks } from "./binary-checks.js";
import { PromptThread } from "./prompt-thread.js";
import { scanVocabulary, vocabularyOf, type Vocabulary } from "./vocabulary.js";

export interface LoadedVocabulary {
  vocabulary: Vocabulary;
  /** A fresh evaluation state of `grammar` (a GenerationPlan's), one per generation. */
  compileGrammar(grammar: { text: string; param: string }): Promise<TokenGrammar>;
  dispose(): Promise<void>;
}

/**
 * `warm`: start the large-prompt thread beside the load and resolve only once it is ready (servers); `threads`:
 * false to tokenize and render every prompt in place (engine-options.ts, promptThreads); `cacheDir`: where start-up
 * facts are kept between runs (engine-options.ts).
 */
export async function loadVocabulary(path: string, options: { warm?: boolean; threads?: boolean; cacheDir?: string } = {}): Promise<LoadedVocabulary> {
  const promptThread = options.threads === false ? undefined : new PromptThread(path, options.cacheDir);
  const warmed = options.warm ? promptThread?.warm() : undefined;
  try {
    // CPU build, prebuilt binaries only: nothing here computes, so no GPU is probed.
    const llama = await withRememberedBinaryChecks(options.cacheDir, () => getLlama({ build: "never", gpu: false, logLevel: LlamaLogLevel.error }));
    const model = await llama.loadModel({ modelPath: path, vocabOnly: true });
    const vocabulary = vocabularyOf(model, path, await scanVocabulary(model, path), promptThread);
    await warmed;
    return {
      vocabulary,
      compileGrammar: async (grammar) => tokenGrammarOf(await compileGrammarState(llama, model, grammar)),
      dispose: async () => { await vocabulary.close(); await model.dispose(); },
    };
  } catch (error) {
    await promptThread?.dispose();
    const cause = error instanceof Error ? error.message : String(error);
    throw new EngineError("backend_failure", `cannot read the vocabulary of ${path}: ${cause}`, { path }, { cause: error });
  }
}
