/**
 * Reasoning models (DeepSeek-R1 distills, QwQ, Qwen3) write their thoughts between `<think>` and `</think>` before
 * the answer. This splits generated text, as it streams, into reasoning and answer pieces. A tag may arrive split
 * across tokens, so a tail that could still become one is held back; the blank lines models put around the tags
 * are trimmed, as llama-server and vLLM trim them.
 */

export const THINK_OPEN = "<think>";
export const THINK_CLOSE = "</think>";

/** A run of generated text, and whether it is reasoning or answer. */
export interface SplitPiece { kind: "reasoning" | "text"; text: string }

export class ReasoningSplitter {
  private mode: SplitPiece["kind"];
  private held = "";
  /** Right after a tag: leading whitespace of what follows is dropped. */
  private afterTag: boolean;

  /**
   * `insideAtStart`: the prompt ended inside a `<think>` block, so generation begins with reasoning; `midThought`:
   * the prompt also began the thought, so the output's leading whitespace belongs to it.
   */
  constructor(insideAtStart: boolean, midThought = false) {
    this.mode = insideAtStart ? "reasoning" : "text";
    this.afterTag = insideAtStart && !midThought;
  }

  /** Whether the output is inside a think block now. */
  get inside(): boolean {
    return this.mode === "reasoning";
  }

  push(text: string): SplitPiece[] {
    this.held += text;
    const pieces: SplitPiece[] = [];
    for (;;) {
      const tag = this.mode === "text" ? THINK_OPEN : THINK_CLOSE;
      const at = this.held.indexOf(tag);
      if (at < 0) break;
      this.emit(pieces, this.held.slice(0, at), true);
      this.held = this.held.slice(at + tag.length);
      this.mode = this.mode === "text" ? "reasoning" : "text";
      this.afterTag = true;
    }
    // A tail that may begin a tag waits, and so does the whitespace before it, dropped if the tag completes.
    const partial = partialTagLength(this.held, this.mode === "text" ? THINK_OPEN : THINK_CLOSE);
    const keep = partial + trailingSpaceLength(this.held.slice(0, this.held.length - partial));
    this.emit(pieces, this.held.slice(0, this.held.length - keep), false);
    this.held = this.held.slice(this.held.length - keep);
    return pieces;
  }

  /** Generation ended: what was held back (a reasoning block left open ends with the output). */
  flush(): SplitPiece[] {
    const pieces: SplitPiece[] = [];
    this.emit(pieces, this.held, this.mode === "reasoning");
    this.held = "";
    return pieces;
  }

  /** Adds `text` in the current mode; `beforeTag`: trailing whitespace before a tag (or a block's end) is dropped. */
  private emit(pieces: SplitPiece[], text: string, beforeTag: boolean): void {
    let out = this.afterTag ? text.trimStart() : text;
    if (beforeTag) out = out.trimEnd();
    if (!out) return;
    this.afterTag = false;
    const last = pieces.at(-1);
    if (last?.kind === this.mode) last.text += out;
    else pieces.push({ kind: this.mode, text: out });
  }
}

/** Length of the longest tail of `text` that is a proper prefix of `tag`. */
function partialTagLength(text: string, tag: string): number {
  for (let n = Math.min(tag.length - 1, text.length); n > 0; n--) if (tag.startsWith(text.slice(text.length - n))) return n;
  return 0;
}

function trailingSpaceLength(text: string): number {
  return text.length - text.trimEnd().length;
}
