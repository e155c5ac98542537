/**
 * The tokenizer side of a model, as every local backend needs it: text ↔ token ids, the chat template and the
 * special tokens, and prompt rendering and tokenizing that moves to worker threads when it is large. The llama.cpp
 * backend adapts its loaded model; other backends load the vocabulary alone (no weights) through node-llama-cpp, so
 * token ids, counts and prefix matching agree across backends.
 */
import { stat } from "node:fs/promises";
import type { LlamaModel, Token } from "node-llama-cpp";
import { createControlText, type ControlText, type ControlToken, type PromptPiece } from "./control-text.js";
import { PromptThread } from "./prompt-thread.js";
import { renderPrepared, templateRejected, type PreparedPrompt, type PromptTemplate } from "./render-prompt.js";

export interface Vocabulary {
  /** Text to ids; `special` recognises special-token text such as `<|im_end|>`. */
  tokenize(text: string, special: boolean): number[];
  /**
   * A split prompt to ids: plain pieces with special tokens off, ids as they are. Large prompts are tokenized on
   * worker threads so the event loop stays free.
   */
  tokenizePrompt(pieces: readonly PromptPiece[]): Promise<number[]>;
  /** Runs a prepared chat template; conversations of many messages are rendered on a worker thread. */
  renderPrompt(prepared: PreparedPrompt): Promise<string>;
  /** Ids to text; `context` are the ids just before, so leading-space rules see what came earlier. */
  detokenize(tokens: readonly number[], special: boolean, context?: readonly number[]): string;
  /** True for end-of-generation ids (EOS, EOT, `<|im_end|>`…). */
  isEog(token: number): boolean;
  readonly template: PromptTemplate;
  /** Quoting of client text and splitting of rendered prompts at the template's control tokens. */
  readonly controlText: ControlText;
  /**
   * The most bytes of text one token stands for, when every byte of any text is covered by some token (byte-level
   * BPE, or byte fallback): then a text of n bytes needs at least n / maxTokenBytes tokens.
   */
  readonly maxTokenBytes?: number;
  /** BOS id, when the model has one and expects it in front of a raw prompt. */
  readonly prependBos?: number;
  /** Number of token ids: valid ids are 0 … size − 1 (detokenizing any other id aborts llama.cpp). */
  readonly size: number;
  /** Fill-in-the-middle markers, when the model has all three. */
  readonly infill?: { prefix: number; suffix: number; middle: number };
  /** Stops the prompt threads that were started. */
  close(): Promise<void>;
}

/**
 * Prompts up to this many characters are tokenized in place (a few milliseconds on a quiet machine; kept small so
 * that on a busy one, where every in-place millisecond stretches, no request holds the event loop for 100 ms).
 */
const INLINE_PROMPT_CHARS = 16 * 1024;
/** Conversations up to this many template messages and tools are rendered in place (a few milliseconds). */
const INLINE_RENDER_ITEMS = 64;
/**
 * Work beyond these (seconds of it) goes to a second thread, so an enormous request queues only behind other
 * enormous ones, never in front of an agent's ordinary long prompt.
 */
const BULK_PROMPT_CHARS = 1024 * 1024;
const BULK_RENDER_ITEMS = 4096;

/**
 * The vocabulary of a model node-llama-cpp has loaded (with or without weights) from the GGUF at `path`, with its
 * scan (scanVocabulary); `large` is the thread for large prompts (see PromptThread.warm), or undefined to tokenize and
 * render every prompt in place (a caller with one request at a time).
 */
export function vocabularyOf(model: LlamaModel, path: string, scan: VocabularyScan, large: PromptThread | undefined): Vocabulary {
  const { prefix, suffix, middle } = model.tokens.infill;
  const bos = model.tokens.bos;
  const threads = large && { large, bulk: large.sibling() };
  const tokenizeInline = (pieces: readonly PromptPiece[]) =>
    pieces.flatMap((piece) => (typeof piece === "number" ? [piece] : model.tokenize(piece, false)));
  return {
    tokenize: (text, special) => model.tokenize(text, special),
    tokenizePrompt: async (pieces) => {
      const chars = pieces.reduce<number>((sum, piece) => sum + (typeof piece === "number" ? 0 : piece.length), 0);
      if (!threads || chars <= INLINE_PROMPT_CHARS) return tokenizeInline(pieces);
      return (chars > BULK_PROMPT_CHARS ? threads.bulk : threads.large).tokenize(pieces);
    },
    renderPrompt: async (prepared) => {
      if (!threads || prepared.items <= INLINE_RENDER_ITEMS) return renderPrepared(prepared);
      const thread = prepared.items > BULK_RENDER_ITEMS ? threads.bulk : threads.large;
      const rendered = await thread.render(prepared.source, prepared.context);
      if ("rejected" in rendered) throw templateRejected(rendered.rejected);
      return rendered.text + prepared.prefill;
    },
    detokenize: (tokens, special, context) => model.detokenize(tokens as Token[], special, context as Token[] | undefined),
    isEog: (token) => model.isEogToken(token as Token),
    template: {
      source: model.fileInfo.metadata.tokenizer?.chat_template,
      bosToken: model.tokens.bosString ?? undefined,
      eosToken: model.tokens.eosString ?? undefined,
    },
    controlText: createControlText(scan.controls),
    maxTokenBytes: scan.maxTokenBytes,
    size: model.fileInfo.metadata.tokenizer?.ggml?.tokens?.length ?? 0,
    prependBos: model.tokens.shouldPrependBosToken && bos != null ? bos : undefined,
    infill: prefix != null && suffix != null && middle != null ? { prefix, suffix, middle } : undefined,
    close: async () => {
      if (threads) await Promise.all([threads.large.dispose(), threads.bulk.dispose()]);
    },
  };
}

/** What one pass over a model's vocabulary finds (see scanVocabulary). */
export interface VocabularyScan {
  controls: ControlToken[];
  maxTokenBytes?: number;
}

/**
 * How long one slice of the scan holds the event loop. A count of tokens per slice (2,048 before) took 2 ms on a quiet
 * machine but 10–35 ms while another model streamed and a load took the second core: the stream's next step waited
 * for it (bench/results/2026-11-27-vm-load-stalls.md).
 */
const SCAN_SLICE_MS = 2;
/** Tokens between two looks at the clock (~0.2 ms of work). */
const CLOCK_EVERY = 128;

/** Scans by GGUF file (path, size, modification time): a model unloaded when idle and loaded again is not rescanned. */
const scans = new Map<string, Promise<VocabularyScan>>();

/**
 * One pass over the vocabulary of the model loaded from `path`: the control tokens (the ones llama.cpp parses only
 * with special tokens on), and the longest token text in bytes when the vocabulary covers every byte. A 152k-token
 * vocabulary takes ~150 ms, so the pass yields to the event loop every few milliseconds: a model loading on demand
 * does not hold the other models' streams for it.
 */
export async function scanVocabulary(model: LlamaModel, path: string): Promise<VocabularyScan> {
  const file = await stat(path);
  const key = `${path}\0${file.size}\0${file.mtimeMs}`;
  let scan = scans.get(key);
  if (!scan) {
    scan = scanTokens(model);
    scans.set(key, scan);
    scan.catch(() => scans.delete(key));
  }
  return scan;
}

async function scanTokens(model: LlamaModel): Promise<VocabularyScan> {
  const controls: ControlToken[] = [];
  let maxTokenBytes = 0;
  let byteTokens = false;
  let scanned = 0;
  let sliceStart = performance.now();
  for (const token of model.iterateAllTokens()) {
    if (++scanned % CLOCK_EVERY === 0 && performance.now() - sliceStart >= SCAN_SLICE_MS) {
      await new Promise((resolve) => setImmediate(resolve));
      sliceStart = performance.now();
    }
    const attributes = model.getTokenAttributes(token);
    const text = model.detokenize([token], true);
    if (attributes.control || attributes.unknown) {
      controls.push({ id: token, text, lstrip: attributes.lstrip, rstrip: attributes.rstrip });
    } else maxTokenBytes = Math.max(maxTokenBytes, Buffer.byteLength(text));
    byteTokens ||= attributes.byte;
  }
  const byteLevel = model.fileInfo.metadata.tokenizer?.ggml?.model === "gpt2";
  return { controls, maxTokenBytes: byteLevel || byteTokens ? maxTokenBytes : undefined };
}
