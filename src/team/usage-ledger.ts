/**
 * The usage ledger: tokens per key, model and UTC day. Requests add to an in-memory batch that is written in
 * one transaction at least every second and on close, so a busy server syncs the disk once a second, not once
 * per request, and a clean shutdown loses nothing. Last-used times of keys ride along in the same transaction.
 */
import type { Usage } from "../engine/index.js";
import { touchKeys } from "./key-store.js";
import type { TeamDb } from "./team-db.js";

/** One row of `kiln usage`. */
export interface UsageRow {
  /** UTC day, YYYY-MM-DD. */
  day: string;
  keyId: string;
  /** The key's name when it is a stored key. */
  keyName?: string;
  model: string;
  requests: number;
  inputTokens: number;
  cachedInputTokens: number;
  outputTokens: number;
}

/** Filters of `kiln usage`: a key id or name, and a first day (YYYY-MM-DD). */
export interface UsageQuery {
  key?: string;
  since?: string;
}

type Totals = Pick<UsageRow, "day" | "keyId" | "model" | "requests" | "inputTokens" | "cachedInputTokens" | "outputTokens">;

/** Batches usage in memory and writes it at least every `flushIntervalMs`. */
export class UsageLedger {
  private readonly pending = new Map<string, Totals>();
  private readonly lastUsed = new Map<string, number>();
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly db: TeamDb,
    private readonly clock: () => number = Date.now,
    flushIntervalMs = 1000,
  ) {
    this.timer = setInterval(() => this.flushQuietly(), flushIntervalMs);
    this.timer.unref();
  }

  /** Adds one finished request. */
  record(keyId: string, model: string, usage: Usage): void {
    const day = new Date(this.clock()).toISOString().slice(0, 10);
    const id = `${day}\u0000${keyId}\u0000${model}`;
    const totals = this.pending.get(id) ?? { day, keyId, model, requests: 0, inputTokens: 0, cachedInputTokens: 0, outputTokens: 0 };
    totals.requests += 1;
    totals.inputTokens += usage.inputTokens;
    totals.cachedInputTokens += usage.cachedInputTokens;
    totals.outputTokens += usage.outputTokens;
    this.pending.set(id, totals);
  }

  /** Notes that a stored key was used now (written with the next flush). */
  touchKey(keyId: string): void {
    this.lastUsed.set(keyId, this.clock());
  }

  /** Writes the batch now. On failure the batch is kept for the next try and the error thrown. */
  flush(): void {
    if (this.pending.size === 0 && this.lastUsed.size === 0) return;
    // Synchronous, so nothing is recorded meanwhile: the batch is cleared only once it is committed.
    this.db.transaction(() => {
      for (const totals of this.pending.values()) upsertTotals(this.db, totals);
      touchKeys(this.db, this.lastUsed);
    });
    this.pending.clear();
    this.lastUsed.clear();
  }

  /** Stops the timer and writes what is left. */
  close(): void {
    clearInterval(this.timer);
    this.flush();
  }

  /** The timer's flush: a failure (database busy for seconds) is retried on the next tick. */
  private flushQuietly(): void {
    try {
      this.flush();
    } catch {
      // Kept in memory; the next tick or close() writes it.
    }
  }
}

function upsertTotals(db: TeamDb, totals: Totals): void {
  db.run(
    `INSERT INTO usage (day, key_id, model, requests, input_tokens, cached_input_tokens, output_tokens)
     VALUES (?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT (day, key_id, model) DO UPDATE SET
       requests = requests + excluded.requests,
       input_tokens = input_tokens + excluded.input_tokens,
       cached_input_tokens = cached_input_tokens + excluded.cached_input_tokens,
       output_tokens = output_tokens + excluded.output_tokens`,
    [totals.day, totals.keyId, totals.model, totals.requests, totals.inputTokens, totals.cachedInputTokens, totals.outputTokens],
  );
}

/** Usage rows by day, key and model; `key` matches a key id or a stored key's name. */
export function queryUsage(db: TeamDb, query: UsageQuery = {}): UsageRow[] {
  const rows = db.all(
    `SELECT u.*, k.name AS key_name FROM usage u LEFT JOIN api_keys k ON k.id = u.key_id
     WHERE (?1 IS NULL OR u.key_id = ?1 OR k.name = ?1) AND (?2 IS NULL OR u.day >= ?2)
     ORDER BY u.day, u.key_id, u.model`,
    [query.key ?? null, query.since ?? null],
  );
  return rows.map((row) => ({
    day: String(row.day),
    keyId: String(row.key_id),
    ...(row.key_name === null ? {} : { keyName: String(row.key_name) }),
    model: String(row.model),
    requests: Number(row.requests),
    inputTokens: Number(row.input_tokens),
    cachedInputTokens: Number(row.cached_input_tokens),
    outputTokens: Number(row.output_tokens),
  }));
}
