/**
 * The usage ledger: tokens per key, model and UTC day. Requests add to an in-memory batch that is written in
 * one transaction at least every second and on close, so a busy server syncs the disk once a second, not once
 * per request, and a clean shutdown loses nothing. Last-used times of keys ride along in the same transaction.
 * The transaction runs on a thread of its own (ledger-writer.ts), never on the event loop.
 */
import { dirname } from "node:path";
import { Worker } from "node:worker_threads";
import type { Usage } from "../engine/index.js";
import { touchKeys } from "./key-store.js";
import type { WriteJob, WriteReply } from "./ledger-writer.js";
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

/** What one write carries: usage totals and keys' last-used times (ms), as the writer thread receives them. */
export interface LedgerBatch {
  totals: Totals[];
  lastUsed: Array<[keyId: string, at: number]>;
}

/**
 * Batches usage in memory and writes it at least every `flushIntervalMs`, on a thread of its own (ledger-writer.ts):
 * one batch at a time, in order; a batch that fails is merged back into the next.
 */
export class UsageLedger {
  private pending = new Map<string, Totals>();
  private lastUsed = new Map<string, number>();
  private readonly timer: NodeJS.Timeout;
  private writer: LedgerThread | undefined;
  /** The latest write, settled either way: the next one starts after it. */
  private writing: Promise<void> = Promise.resolve();

  constructor(
    private readonly db: TeamDb,
    private readonly clock: () => number = Date.now,
    flushIntervalMs = 1000,
  ) {
    // A failure (the database busy for seconds) keeps the batch for the next tick.
    this.timer = setInterval(() => void this.flush().catch(() => undefined), flushIntervalMs);
    this.timer.unref();
  }

  /** Adds one finished request. */
  record(keyId: string, model: string, usage: Usage): void {
    const day = new Date(this.clock()).toISOString().slice(0, 10);
    const { inputTokens, cachedInputTokens, outputTokens } = usage;
    addTotals(this.pending, { day, keyId, model, requests: 1, inputTokens, cachedInputTokens, outputTokens });
  }

  /** Notes that a stored key was used now (written with the next flush). */
  touchKey(keyId: string): void {
    this.lastUsed.set(keyId, this.clock());
  }

  /** Writes what is pending now; resolves once it is committed. On failure it stays pending and the error is thrown. */
  flush(): Promise<void> {
    const write = this.writing.then(() => this.writeBatch());
    this.writing = write.catch(() => undefined);
    return write;
  }

  /** Stops the timer, writes what is left and stops the writer thread. */
  async close(): Promise<void> {
    clearInterval(this.timer);
    try {
      await this.flush();
    } finally {
      await this.writer?.stop();
      this.writer = undefined;
    }
  }

  private async writeBatch(): Promise<void> {
    if (this.pending.size === 0 && this.lastUsed.size === 0) return;
    const batch: LedgerBatch = { totals: [...this.pending.values()], lastUsed: [...this.lastUsed] };
    this.pending = new Map();
    this.lastUsed = new Map();
    try {
      // A thread that failed or stopped is replaced: messages posted to it would never be answered.
      if (!this.writer?.alive) this.writer = new LedgerThread(dirname(this.db.path));
      await this.writer.write(batch);
    } catch (error) {
      for (const totals of batch.totals) addTotals(this.pending, totals);
      for (const [keyId, at] of batch.lastUsed) this.lastUsed.set(keyId, Math.max(at, this.lastUsed.get(keyId) ?? 0));
      throw error;
    }
  }
}

/** Writes one batch in one transaction (one lock, one sync to disk). */
export function writeBatch(db: TeamDb, batch: LedgerBatch): void {
  db.transaction(() => {
    for (const totals of batch.totals) upsertTotals(db, totals);
    touchKeys(db, new Map(batch.lastUsed));
  });
}

function addTotals(into: Map<string, Totals>, totals: Totals): void {
  const id = `${totals.day}\u0000${totals.keyId}\u0000${totals.model}`;
  const sum = into.get(id);
  if (!sum) {
    into.set(id, { ...totals });
    return;
  }
  sum.requests += totals.requests;
  sum.inputTokens += totals.inputTokens;
  sum.cachedInputTokens += totals.cachedInputTokens;
  sum.outputTokens += totals.outputTokens;
}

/**
 * The compiled writer (dist/team/ledger-writer.js). The path is the same from src/team under vitest and from
 * dist/team, so tests run the built writer, as they run the built native module.
 */
const WRITER_URL = new URL("../../dist/team/ledger-writer.js", import.meta.url);

/** The writer thread: started on the first write, not keeping the process alive. */
class LedgerThread {
  alive = true;
  private readonly worker: Worker;
  private readonly waiting = new Map<number, { resolve(): void; reject(error: Error): void }>();
  private nextId = 0;

  constructor(home: string) {
    this.worker = new Worker(WRITER_URL, { workerData: { home } });
    this.worker.unref();
    this.worker.on("message", ({ id, error }: WriteReply) => {
      const job = this.waiting.get(id);
      this.waiting.delete(id);
      if (error === undefined) job?.resolve();
      else job?.reject(new Error(`usage not written: ${error}`));
    });
    this.worker.on("error", (error) => this.failAll(error));
    this.worker.on("exit", () => this.failAll(new Error("usage not written: the ledger's writer thread stopped")));
  }

  write(batch: LedgerBatch): Promise<void> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      this.worker.postMessage({ id, batch } satisfies WriteJob);
    });
  }

  async stop(): Promise<void> {
    await this.worker.terminate();
  }

  private failAll(error: Error): void {
    this.alive = false;
    for (const job of this.waiting.values()) job.reject(error);
    this.waiting.clear();
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
