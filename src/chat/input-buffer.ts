/** The multi-line input being edited: text and a cursor offset. Pure functions; each returns a new buffer. */

/** Text being typed and the cursor position (a UTF-16 offset into `text`, 0..text.length). */
export interface InputBuffer {
  text: string;
  cursor: number;
}

export const EMPTY_INPUT: InputBuffer = { text: "", cursor: 0 };

/** A buffer holding `text` with the cursor at its end. */
export function inputOf(text: string): InputBuffer {
  return { text, cursor: text.length };
}

/** Inserts text (typed or pasted) at the cursor. Carriage returns from pastes become newlines. */
export function insertText(buffer: InputBuffer, typed: string): InputBuffer {
  const clean = typed.replace(/\r\n?/g, "\n");
  const text = buffer.text.slice(0, buffer.cursor) + clean + buffer.text.slice(buffer.cursor);
  return { text, cursor: buffer.cursor + clean.length };
}

/** Deletes the character before the cursor. */
export function deleteBackward(buffer: InputBuffer): InputBuffer {
  if (buffer.cursor === 0) return buffer;
  const text = buffer.text.slice(0, buffer.cursor - 1) + buffer.text.slice(buffer.cursor);
  return { text, cursor: buffer.cursor - 1 };
}

/** Deletes the character under the cursor. */
export function deleteForward(buffer: InputBuffer): InputBuffer {
  if (buffer.cursor === buffer.text.length) return buffer;
  return { text: buffer.text.slice(0, buffer.cursor) + buffer.text.slice(buffer.cursor + 1), cursor: buffer.cursor };
}

/** Moves the cursor one character left or right, or to the start or end of its line. */
export function moveCursor(buffer: InputBuffer, move: "left" | "right" | "home" | "end"): InputBuffer {
  const { text, cursor } = buffer;
  switch (move) {
    case "left": return { text, cursor: Math.max(0, cursor - 1) };
    case "right": return { text, cursor: Math.min(text.length, cursor + 1) };
    case "home": return { text, cursor: text.lastIndexOf("\n", cursor - 1) + 1 };
    case "end": {
      const end = text.indexOf("\n", cursor);
      return { text, cursor: end === -1 ? text.length : end };
    }
  }
}

/**
 * Moves the cursor to the line above or below, keeping its column where the line is long enough. Returns
 * undefined on the first (up) or last (down) line, so the caller can browse history instead.
 */
export function moveLine(buffer: InputBuffer, direction: "up" | "down"): InputBuffer | undefined {
  const { text, cursor } = buffer;
  const lineStart = text.lastIndexOf("\n", cursor - 1) + 1;
  const column = cursor - lineStart;
  if (direction === "up") {
    if (lineStart === 0) return undefined;
    const previousStart = text.lastIndexOf("\n", lineStart - 2) + 1;
    return { text, cursor: Math.min(previousStart + column, lineStart - 1) };
  }
  const lineEnd = text.indexOf("\n", cursor);
  if (lineEnd === -1) return undefined;
  const nextEnd = text.indexOf("\n", lineEnd + 1);
  return { text, cursor: Math.min(lineEnd + 1 + column, nextEnd === -1 ? text.length : nextEnd) };
}
