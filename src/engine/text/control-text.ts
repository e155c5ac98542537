/**
 * Keeps client text from acting as control tokens. Every client-supplied string is quoted before it enters the chat
 * template (each control-token text, e.g. `<|im_end|>`, becomes a private-use escape), so after rendering the only
 * control-token texts left are the template's own markup. `splitPrompt` then cuts the prompt at that markup, one
 * control token id per occurrence, and restores the quoted text as plain text for tokenizing without special tokens.
 * Splitting in JS is linear, unlike llama.cpp's special-token parsing, which is quadratic in the number of markers.
 */

/** A token that only its id may produce: llama.cpp parses its text only when special tokens are on. */
export interface ControlToken {
  id: number;
  text: string;
  /** llama.cpp drops whitespace left of (lstrip) or right of (rstrip) this token when it parses it. */
  lstrip?: boolean;
  rstrip?: boolean;
}

/** A prompt ready to tokenize: plain text (special tokens off) and control token ids, in order. */
export type PromptPiece = string | number;

/** Quotes client strings and splits rendered prompts for one vocabulary's control tokens. */
export interface ControlText {
  /** A client string as it may enter the template: control-token texts escaped. */
  quote(text: string): string;
  /** The rendered prompt as pieces: the template's control tokens as ids, everything else as restored plain text. */
  splitPrompt(rendered: string): PromptPiece[];
}

/** Starts an escape; never part of a template's markup. Followed by itself (a literal) or a control token's code. */
const ESCAPE = "\uE000";
const FIRST_CODE = 0xe001;

/** What llama.cpp's `isspace` strips next to lstrip/rstrip tokens (a loop: `/\s+$/` is quadratic in V8). */
const isSpace = (code: number) => code === 32 || (code >= 9 && code <= 13);

function trimSpaceStart(text: string): string {
  let start = 0;
  while (start < text.length && isSpace(text.charCodeAt(start))) start++;
  return text.slice(start);
}

function trimSpaceEnd(text: string): string {
  let end = text.length;
  while (end > 0 && isSpace(text.charCodeAt(end - 1))) end--;
  return text.slice(0, end);
}

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** Builds the quoting and splitting for a vocabulary's control tokens (longest text first, as llama.cpp matches). */
export function createControlText(tokens: readonly ControlToken[]): ControlText {
  const controls = tokens.filter((token) => token.text.length > 0).sort((a, b) => b.text.length - a.text.length);
  const codeOf = new Map(controls.map((token, index) => [token.text, String.fromCharCode(FIRST_CODE + index)]));
  const byText = new Map(controls.map((token) => [token.text, token]));
  const alternatives = controls.map((token) => escapeRegExp(token.text));
  const quoted = new RegExp([ESCAPE, ...alternatives].join("|"), "g");
  const markup = alternatives.length > 0 ? new RegExp(alternatives.join("|"), "g") : undefined;
  const escaped = new RegExp(`${ESCAPE}([\\s\\S])`, "g");
  const restore = (text: string) => text.replace(escaped, (_, code: string) => (code === ESCAPE ? ESCAPE : controls[code.charCodeAt(0) - FIRST_CODE]?.text ?? ""));

  return {
    quote: (text) => text.replace(quoted, (match) => ESCAPE + (match === ESCAPE ? ESCAPE : codeOf.get(match))),
    splitPrompt(rendered) {
      const pieces: PromptPiece[] = [];
      let start = 0;
      let stripLeading = false;
      for (const match of markup ? rendered.matchAll(markup) : []) {
        const token = byText.get(match[0])!;
        let text = rendered.slice(start, match.index);
        if (stripLeading) text = trimSpaceStart(text);
        if (token.lstrip) text = trimSpaceEnd(text);
        if (text.length > 0) pieces.push(restore(text));
        pieces.push(token.id);
        start = match.index + match[0].length;
        stripLeading = token.rstrip === true;
      }
      const rest = stripLeading ? trimSpaceStart(rendered.slice(start)) : rendered.slice(start);
      if (rest.length > 0) pieces.push(restore(rest));
      return pieces;
    },
  };
}
