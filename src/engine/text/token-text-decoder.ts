/**
 * Incremental detokenisation. A UTF-8 character can span several tokens (emoji, CJK); decoding token by token
 * would emit U+FFFD halves. Tokens are held until they decode to whole characters, and the last few emitted
 * tokens are passed as context so the tokenizer's leading-space rules see what came before.
 */
import type { Vocabulary } from "./vocabulary.js";

const REPLACEMENT = "\uFFFD";
/** A character is at most 4 bytes, so more pending tokens than this means a genuinely invalid sequence. */
const MAX_PENDING = 4;
const CONTEXT_TOKENS = 4;
const TRAILING_REPLACEMENTS = /\uFFFD+$/;

export class TokenTextDecoder {
  private pending: number[] = [];
  private context: number[] = [];

  constructor(private readonly vocabulary: Pick<Vocabulary, "detokenize">) {}

  /** Adds one token; returns the text that is now complete (possibly ""). */
  push(token: number): string {
    this.pending.push(token);
    const text = this.vocabulary.detokenize(this.pending, false, this.context);
    if (text.endsWith(REPLACEMENT) && this.pending.length < MAX_PENDING) return "";
    this.context = [...this.context, ...this.pending].slice(-CONTEXT_TOKENS);
    this.pending = [];
    return text;
  }

  /**
   * Whatever is still held when generation ends, less the bytes of a character the last tokens began but did not
   * finish (a reply cut by its token limit inside an emoji): a reply ends at its last whole character rather than in
   * U+FFFD, which a shell pipeline or a JSON consumer would otherwise keep as part of the answer.
   */
  flush(): string {
    if (this.pending.length === 0) return "";
    const text = this.vocabulary.detokenize(this.pending, false, this.context);
    this.pending = [];
    return text.replace(TRAILING_REPLACEMENTS, "");
  }
}
