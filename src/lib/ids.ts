/** Opaque ids with the vendors' prefixes (msg_, toolu_, req_, chatcmpl-, call_). Injectable for golden files. */
import { randomBytes } from "node:crypto";

const ALPHABET = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";

/** A base58 string of `length` random characters. */
export function randomId(length = 24): string {
  const bytes = randomBytes(length);
  let out = "";
  for (const byte of bytes) out += ALPHABET[byte % ALPHABET.length];
  return out;
}

export type IdFactory = (prefix: string) => string;

/** Default id factory: prefix + random base58. */
export const newId: IdFactory = (prefix) => `${prefix}${randomId()}`;

/** Deterministic ids for golden files: prefix + a counter. */
export function sequentialIds(): IdFactory {
  let n = 0;
  return (prefix) => `${prefix}${String(++n).padStart(4, "0")}`;
}

/** Tool-call id prefixes of the vendors kiln speaks to (its surfaces and remote upstreams). */
const TOOL_CALL_PREFIXES = /^(?:call_|toolu_)/;

/**
 * A tool-call id as one surface writes it: `prefix` once, whatever vendor prefix the id already carried (engine ids
 * are bare; a remote upstream's may come as `call_…`), so no id reads `call_call_…` or `toolu_call_…`.
 */
export function toToolCallId(prefix: "call_" | "toolu_", id: string): string {
  return prefix + id.replace(TOOL_CALL_PREFIXES, "");
}
