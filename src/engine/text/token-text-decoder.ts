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

  /** Whatever is still held when generation ends. */
  flush(): string {
    if (this.pending.length === 0) return "";
    const text = this.vocabulary.detokenize(this.pending, false, this.context);
    this.pending = [];
    return text;
  }
}
