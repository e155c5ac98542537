/**
 * Checks presented keys against the key store. Reads through to the database so `kiln keys create/revoke` in
 * another process takes effect without a restart; a lookup is cached for at most `ttlMs`, and only while the
 * database file is unchanged (any commit by any process changes it), so a revocation counts from the next request.
 */
import type { KeyVerifier, Principal } from "../server/context.js";
import { findKeyByHash, hashKey, isKeyLive, type StoredKey } from "./key-store.js";
import type { Limits } from "./rate-limiter.js";
import type { TeamDb } from "./team-db.js";

/** Options of {@link StoredKeyVerifier}. */
export interface StoredKeyVerifierOptions {
  clock?: () => number;
  /** Longest a lookup is reused; at most one second. */
  ttlMs?: number;
  /** Called with the id of each stored key that passes (to record its last use). */
  onUse?(keyId: string): void;
}

interface CacheEntry {
  key: StoredKey | undefined;
  at: number;
  fingerprint: string;
}

const MAX_CACHED = 1024;

/** The KeyVerifier of stored keys; also remembers the limits of the keys it accepted. */
export class StoredKeyVerifier implements KeyVerifier {
  private readonly cache = new Map<string, CacheEntry>();
  private readonly limits = new Map<string, Limits>();
  private readonly clock: () => number;
  private readonly ttlMs: number;

  constructor(
    private readonly db: TeamDb,
    private readonly options: StoredKeyVerifierOptions = {},
  ) {
    this.clock = options.clock ?? Date.now;
    this.ttlMs = Math.min(options.ttlMs ?? 500, 1000);
  }

  verify(key: string): Principal | undefined {
    const stored = this.lookup(hashKey(key));
    if (!stored || !isKeyLive(stored, this.clock())) return undefined;
    this.limits.set(stored.id, { rpm: stored.rpm, tpm: stored.tpm });
    this.options.onUse?.(stored.id);
    return { keyId: stored.id, name: stored.name, ...(stored.models ? { models: stored.models } : {}) };
  }

  /** The limits of a key this verifier has accepted; none for any other principal. */
  limitsOf(keyId: string): Limits {
    return this.limits.get(keyId) ?? {};
  }

  private lookup(hash: string): StoredKey | undefined {
    const now = this.clock();
    const fingerprint = this.db.fingerprint();
    const cached = this.cache.get(hash);
    if (cached && now - cached.at < this.ttlMs && cached.fingerprint === fingerprint) return cached.key;
    const key = findKeyByHash(this.db, hash);
    if (this.cache.size >= MAX_CACHED) this.cache.clear();
    this.cache.set(hash, { key, at: now, fingerprint });
    return key;
  }
}
