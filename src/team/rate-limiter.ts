/**
 * Per-key requests-per-minute and tokens-per-minute limits over a sliding 60-second window. Each admitted request
 * leaves an entry stamped with its admission time; its tokens start as the estimated input and are settled to the
 * real input + output once usage is known. The clock is injectable so tests never sleep.
 */
import { EngineError } from "../engine/index.js";

/** A key's limits; an absent figure is unlimited. */
export interface Limits {
  rpm?: number;
  tpm?: number;
}

/** One limit as the headers report it. */
export interface LimitState {
  limit: number;
  remaining: number;
  /** Unix milliseconds at which the window is fully replenished. */
  resetAt: number;
}

/** What a key has left right now; only the limits it has. */
export interface LimitSnapshot {
  requests?: LimitState;
  tokens?: LimitState;
}

/** An admitted request: report its real token count once known. */
export interface Admission {
  settle(tokens: number): void;
}

interface Entry {
  at: number;
  tokens: number;
}

const NO_OP: Admission = { settle() {} };

/** In-memory limits of one server process, per key id. */
export class RateLimiter {
  private readonly entries = new Map<string, Entry[]>();

  constructor(
    private readonly clock: () => number = Date.now,
    private readonly windowMs = 60_000,
  ) {}

  /** Admits a request or throws `rate_limited` with `retryAfter` (seconds) when a limit is reached. */
  admit(keyId: string, limits: Limits, estimatedTokens: number): Admission {
    if (limits.rpm === undefined && limits.tpm === undefined) return NO_OP;
    const now = this.clock();
    const entries = this.prune(keyId, now);
    if (limits.rpm !== undefined && entries.length >= limits.rpm) {
      throw rateLimited(`${limits.rpm} requests per minute`, entries[entries.length - limits.rpm]!.at + this.windowMs - now);
    }
    if (limits.tpm !== undefined) this.checkTokens(entries, limits.tpm, estimatedTokens, now);
    const entry: Entry = { at: now, tokens: estimatedTokens };
    entries.push(entry);
    this.entries.set(keyId, entries);
    return { settle: (tokens) => void (entry.tokens = tokens) };
  }

  /** The state of each limit the key has, for the rate-limit headers. */
  snapshot(keyId: string, limits: Limits): LimitSnapshot {
    const now = this.clock();
    const entries = this.prune(keyId, now);
    const resetAt = entries.length > 0 ? entries[entries.length - 1]!.at + this.windowMs : now;
    const used = sumTokens(entries);
    const snapshot: LimitSnapshot = {};
    if (limits.rpm !== undefined) snapshot.requests = { limit: limits.rpm, remaining: Math.max(0, limits.rpm - entries.length), resetAt };
    if (limits.tpm !== undefined) snapshot.tokens = { limit: limits.tpm, remaining: Math.max(0, limits.tpm - used), resetAt };
    return snapshot;
  }

  private checkTokens(entries: Entry[], tpm: number, needed: number, now: number): void {
    if (needed > tpm) throw rateLimited(`${tpm} tokens per minute (this request alone needs about ${needed})`, this.windowMs);
    let used = sumTokens(entries);
    if (used + needed <= tpm) return;
    // Find the first moment enough old entries have left the window.
    for (const entry of entries) {
      used -= entry.tokens;
      if (used + needed <= tpm) throw rateLimited(`${tpm} tokens per minute`, entry.at + this.windowMs - now);
    }
    throw rateLimited(`${tpm} tokens per minute`, this.windowMs);
  }

  /** Drops entries older than the window; forgets keys with none left. */
  private prune(keyId: string, now: number): Entry[] {
    const entries = this.entries.get(keyId) ?? [];
    const firstLive = entries.findIndex((entry) => entry.at + this.windowMs > now);
    const live = firstLive === -1 ? [] : entries.slice(firstLive);
    if (live.length === 0) this.entries.delete(keyId);
    else this.entries.set(keyId, live);
    return live;
  }
}

function sumTokens(entries: Entry[]): number {
  return entries.reduce((sum, entry) => sum + entry.tokens, 0);
}

function rateLimited(limit: string, waitMs: number): EngineError {
  const retryAfter = Math.max(1, Math.ceil(waitMs / 1000));
  return new EngineError("rate_limited", `Rate limit reached for this API key: ${limit}. Retry in ${retryAfter} s.`, { retryAfter });
}
