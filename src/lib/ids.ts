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
