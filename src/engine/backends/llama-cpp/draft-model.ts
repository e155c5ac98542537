/**
 * The draft model of a target served with speculative decoding (speculative-decode.ts): a smaller model with the
 * target's vocabulary, in a context of its own holding one sequence per target sequence, each as long as the
 * target's. A draft whose vocabulary differs from the target's is refused at load: its token ids would mean other
 * text.
 */
import type { LlamaContext, LlamaContextSequence, LlamaModel } from "node-llama-cpp";
import { basename } from "node:path";
import { EngineError } from "../../../errors/engine-error.js";
import { loadGgufModel, warnOnStderr } from "./load-llama.js";
import type { LlamaCppModelOptions } from "./llama-cpp-model-options.js";
import { applyDecodeThreads, DEFAULT_MIN_TOKENS_FOR_ALL_THREADS } from "./decode-threads.js";

/** Tokens drafted per step unless `--draft-max` says otherwise. */
export const DEFAULT_DRAFT_MAX = 8;

/** The draft model and its context, loaded beside a target. */
export class DraftModel {
  private constructor(
    private readonly model: LlamaModel,
    private readonly context: LlamaContext,
    readonly maxTokens: number,
  ) {}

  /**
   * Loads the draft named in `options.draft` with as many sequences and tokens per sequence as the target's context,
   * and refuses one whose vocabulary differs from the target's (an `invalid_request` naming both files).
   */
  static async open(options: LlamaCppModelOptions, target: LlamaContext, cores: () => number): Promise<DraftModel> {
    const draft = options.draft!;
    const model = await loadGgufModel(options.llama, draft.path, { gpuLayers: options.gpuLayers, fitTokens: target.contextSize * target.totalSequences, warn: options.warn ?? warnOnStderr });
    let context: LlamaContext | undefined;
    try {
      context = await model.createContext({ contextSize: target.contextSize, sequences: target.totalSequences, threads: options.threads });
      checkVocabulary(target, context, options.path, draft.path);
    } catch (error) {
      await context?.dispose();
      await model.dispose();
      if (error instanceof EngineError) throw error;
      throw new EngineError("backend_failure", `cannot open the draft model ${basename(draft.path)} beside ${options.id}: ${error instanceof Error ? error.message : String(error)}; a smaller --ctx-size or --parallel leaves it room`, { path: draft.path }, { cause: error });
    }
    // On the CPU the draft's one-token steps run on one thread, not on a persistent pool of its own: the two contexts
    // take turns, and each pool's workers spin a while after its step, so a second pool would hold a core through
    // the target's steps.
    if (options.llama.gpu === false || model.gpuLayers === 0) applyDecodeThreads(context, { threads: options.threads, minTokensForAllThreads: DEFAULT_MIN_TOKENS_FOR_ALL_THREADS, cores });
    return new DraftModel(model, context, draft.maxTokens ?? DEFAULT_DRAFT_MAX);
  }

  /** The draft sequence of each target sequence, one each. */
  pairWith(targets: LlamaContextSequence[]): Map<LlamaContextSequence, LlamaContextSequence> {
    return new Map(targets.map((target) => [target, this.context.getSequence()]));
  }

  async dispose(): Promise<void> {
    await this.context.dispose();
    await this.model.dispose();
  }
}

/**
 * node-llama-cpp compares the vocabularies as llama.cpp's own speculative decoding does (type, special tokens, size
 * within 128, each token's text); its check is on the native context, so the error becomes kiln's.
 */
function checkVocabulary(target: LlamaContext, draft: LlamaContext, targetPath: string, draftPath: string): void {
  const native = (target as unknown as { _ctx: { ensureDraftContextIsCompatibleForSpeculative(draft: object): void } })._ctx;
  try {
    native.ensureDraftContextIsCompatibleForSpeculative((draft as unknown as { _ctx: object })._ctx);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new EngineError("invalid_request", `${basename(draftPath)} cannot draft for ${basename(targetPath)}: the two models' vocabularies differ (${reason})`, { param: "draftModel", path: draftPath });
  }
}
