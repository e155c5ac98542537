/**
 * JSON.parse reads every number as a double, exact only up to 2^53: 2^63 − 1 and 2^63 read alike. Where a field's
 * whole 64-bit range matters, its integer is re-read from the JSON text itself.
 */

/**
 * The integer written as the top-level field `key` of the JSON object `text` (the last one, as JSON.parse keeps),
 * exactly; undefined when the field is absent or not written as a plain integer. `text` must be valid JSON.
 */
export function readTopLevelInteger(text: string, key: string): bigint | undefined {
  let depth = 0;
  let found: bigint | undefined;
  for (let i = 0; i < text.length; i++) {
    const char = text[i];
    if (char === "{" || char === "[") depth++;
    else if (char === "}" || char === "]") depth--;
    else if (char === '"') {
      const end = stringEnd(text, i);
      if (depth === 1 && JSON.parse(text.slice(i, end)) === key) {
        const literal = /\s*:\s*(-?\d+)(?![.eE\d])/y;
        literal.lastIndex = end;
        const match = literal.exec(text);
        if (match) found = BigInt(match[1]!);
      }
      i = end - 1;
    }
  }
  return found;
}

/** The index just past the string literal opening at `start`. */
function stringEnd(text: string, start: number): number {
  for (let i = start + 1; i < text.length; i++) {
    if (text[i] === "\\") i++;
    else if (text[i] === '"') return i + 1;
  }
  return text.length;
}
