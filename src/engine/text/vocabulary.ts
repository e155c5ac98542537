/**
 * The tokenizer side of a model, as every local backend needs it: text ↔ token ids, the chat template and the
 * special tokens. The llama.cpp backend adapts its loaded model; other backends load the vocabulary alone (no
 * weights) through node-llama-cpp, so token ids, counts and prefix matching agree across backends.
 */
import type { LlamaModel, Token } from "node-llama-cpp";
import type { PromptTemplate } from "./render-prompt.js";

export interface Vocabulary {
  /** Text to ids; `special` recognises special-token text such as `<|im_end|>`. */
  tokenize(text: string, special: boolean): number[];
  /** Ids to text; `context` are the ids just before, so leading-space rules see what came earlier. */
  detokenize(tokens: readonly number[], special: boolean, context?: readonly number[]): string;
  /** True for end-of-generation ids (EOS, EOT, `<|im_end|>`…). */
  isEog(token: number): boolean;
  readonly template: PromptTemplate;
  /** BOS id, when the model has one and expects it in front of a raw prompt. */
  readonly prependBos?: number;
  /** Number of token ids: valid ids are 0 … size − 1 (detokenizing any other id aborts llama.cpp). */
  readonly size: number;
  /** Fill-in-the-middle markers, when the model has all three. */
  readonly infill?: { prefix: number; suffix: number; middle: number };
}

/** The vocabulary of a model node-llama-cpp has loaded (with or without weights). */
export function vocabularyOf(model: LlamaModel): Vocabulary {
  const { prefix, suffix, middle } = model.tokens.infill;
  const bos = model.tokens.bos;
  return {
    tokenize: (text, special) => model.tokenize(text, special),
    detokenize: (tokens, special, context) => model.detokenize(tokens as Token[], special, context as Token[] | undefined),
    isEog: (token) => model.isEogToken(token as Token),
    template: {
      source: model.fileInfo.metadata.tokenizer?.chat_template,
      bosToken: model.tokens.bosString ?? undefined,
      eosToken: model.tokens.eosString ?? undefined,
    },
    size: model.fileInfo.metadata.tokenizer?.ggml?.tokens?.length ?? 0,
    prependBos: model.tokens.shouldPrependBosToken && bos != null ? bos : undefined,
    infill: prefix != null && suffix != null && middle != null ? { prefix, suffix, middle } : undefined,
  };
}
