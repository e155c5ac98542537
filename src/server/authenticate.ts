/**
 * API-key authentication shared by every surface: `x-api-key: K` or `Authorization: Bearer K` (one key space;
 * Claude Code may send both). Static keys are compared in constant time; stored keys (team features) after.
 * With no key source configured, auth is off and any header, even `Bearer undefined`, is accepted.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import type { KeyVerifier, Principal } from "./context.js";

/** The anonymous principal used when auth is off. */
export const ANONYMOUS: Principal = { keyId: "anonymous" };

/** Checks presented keys against static keys then the verifier. */
export interface Authenticator {
  /** False when no key source is configured (every request is anonymous). */
  readonly enabled: boolean;
  /** The principal of the request, or undefined when no presented key is valid. */
  authenticate(headers: Headers): Promise<Principal | undefined>;
}

/** Builds the authenticator for a set of static keys and optional stored keys. */
export function createAuthenticator(staticKeys: string[], verifier?: KeyVerifier): Authenticator {
  const digests = staticKeys.filter((key) => key.length > 0).map(digest);
  const enabled = digests.length > 0 || verifier !== undefined;
  return {
    enabled,
    async authenticate(headers) {
      if (!enabled) return ANONYMOUS;
      for (const key of readPresentedKeys(headers)) {
        const principal = matchStatic(key, digests) ?? (await verifier?.verify(key));
        if (principal) return principal;
      }
      return undefined;
    },
  };
}

/** Keys the request presents: `x-api-key` first, then a Bearer token. */
export function readPresentedKeys(headers: Headers): string[] {
  const keys: string[] = [];
  const apiKey = headers.get("x-api-key")?.trim();
  if (apiKey) keys.push(apiKey);
  const bearer = /^Bearer\s+(.+)$/i.exec(headers.get("authorization")?.trim() ?? "")?.[1]?.trim();
  if (bearer && bearer !== apiKey) keys.push(bearer);
  return keys;
}

// Hashing first makes the comparison length-independent; every key is compared so timing reveals nothing.
function matchStatic(key: string, digests: Buffer[]): Principal | undefined {
  const presented = digest(key);
  let found = -1;
  digests.forEach((candidate, index) => {
    if (timingSafeEqual(candidate, presented) && found < 0) found = index;
  });
  return found >= 0 ? { keyId: `static:${found + 1}` } : undefined;
}

function digest(key: string): Buffer {
  return createHash("sha256").update(key).digest();
}
