/**
 * The embedded team database, `$KILN_HOME/kiln.db`: keys and usage. SQLite compiled to WebAssembly
 * (node-sqlite3-wasm) because it writes a real file through node:fs and needs no native build. Its VFS locks the
 * file with a `kiln.db.lock` directory (one lock for readers and writers), so every statement is short and a busy
 * database is retried here; a lock left by a killed process is cleared once it is clearly stale.
 */
import { mkdirSync, rmdirSync, statSync } from "node:fs";
import { join } from "node:path";
import sqlite from "node-sqlite3-wasm";
import { MIGRATIONS } from "./team-schema.js";

type SqlValue = string | number | bigint | null | boolean;
/** One result row, columns by name. */
export type Row = Record<string, string | number | bigint | Uint8Array | null>;

/**
 * How long a busy database is retried before giving up. Every lock kiln takes lasts milliseconds, so a lock
 * directory older than STALE_LOCK_MS was left by a process that died holding it.
 */
const BUSY_RETRY_MS = 5_000;
const STALE_LOCK_MS = 4_000;

/** The path of the team database under a kiln home. */
export function teamDbPath(home: string): string {
  return join(home, "kiln.db");
}

/** A connection to the team database. Synchronous: statements are tiny and local. */
export class TeamDb {
  readonly path: string;
  private readonly db: InstanceType<typeof sqlite.Database>;

  private constructor(path: string) {
    this.path = path;
    this.db = new sqlite.Database(path);
  }

  /** Opens (creating when missing) the database under `home` and brings its schema up to date. */
  static open(home: string): TeamDb {
    mkdirSync(home, { recursive: true });
    const teamDb = new TeamDb(teamDbPath(home));
    teamDb.retry(() => teamDb.db.exec("PRAGMA busy_timeout = 1000"));
    teamDb.migrate();
    return teamDb;
  }

  /** Runs a statement that changes rows; returns how many changed. */
  run(sql: string, params: SqlValue[] = []): number {
    return this.retry(() => this.db.run(sql, params).changes);
  }

  /** The first row, or undefined. */
  get(sql: string, params: SqlValue[] = []): Row | undefined {
    return this.retry(() => (this.db.get(sql, params) as Row | null) ?? undefined);
  }

  /** Every row. */
  all(sql: string, params: SqlValue[] = []): Row[] {
    return this.retry(() => this.db.all(sql, params) as Row[]);
  }

  /** Runs `work` in one write transaction (one lock, one sync to disk); inside another one it just joins it. */
  transaction<T>(work: () => T): T {
    if (this.db.inTransaction) return work();
    this.retry(() => this.db.exec("BEGIN IMMEDIATE"));
    try {
      const result = work();
      this.commit();
      return result;
    } catch (error) {
      if (this.db.inTransaction) this.db.exec("ROLLBACK");
      throw error;
    }
  }

  close(): void {
    if (this.db.isOpen) this.db.close();
  }

  /**
   * The database file's identity and last change (any commit by any process changes it). A statement costs a lock
   * directory made and removed (0.3–2.5 ms on 2 busy cores); a stat costs microseconds, so an answer read while the
   * file had this fingerprint can be reused while it keeps it. Take it before the read: a commit landing in between
   * only makes the next check miss.
   */
  fingerprint(): string {
    try {
      const stat = statSync(this.path, { bigint: true });
      return `${stat.ino}:${stat.size}:${stat.mtimeNs}:${stat.ctimeNs}`;
    } catch {
      return "missing";
    }
  }

  /** COMMIT can find the file busy (a reader still holds it); SQLite keeps the transaction open, so try again. */
  private commit(): void {
    const deadline = Date.now() + BUSY_RETRY_MS;
    for (;;) {
      try {
        this.db.exec("COMMIT");
        return;
      } catch (error) {
        if (!isBusy(error) || !this.db.inTransaction || Date.now() > deadline) throw error;
        pause(5);
      }
    }
  }

  private migrate(): void {
    this.transaction(() => {
      const version = Number(this.db.get("PRAGMA user_version")?.user_version ?? 0);
      for (const [index, sql] of MIGRATIONS.entries()) {
        if (index >= version) this.db.exec(sql);
      }
      this.db.exec(`PRAGMA user_version = ${MIGRATIONS.length}`);
    });
  }

  /** Retries `work` while another process holds the lock (busy_timeout covers most waits; this covers the rest). */
  private retry<T>(work: () => T): T {
    const deadline = Date.now() + BUSY_RETRY_MS;
    for (;;) {
      try {
        return work();
      } catch (error) {
        if (!isBusy(error) || this.db.inTransaction) throw error;
        if (this.clearStaleLock()) continue;
        if (Date.now() > deadline) throw error;
        pause(5);
      }
    }
  }

  /** Removes a lock directory left by a process that died holding it; true when one was removed. */
  private clearStaleLock(): boolean {
    const lock = `${this.path}.lock`;
    try {
      if (Date.now() - statSync(lock).mtimeMs < STALE_LOCK_MS) return false;
      rmdirSync(lock);
      return true;
    } catch {
      return false;
    }
  }
}

/** Opens the database under `home`, runs `work` and closes it (for one-shot CLI commands). */
export function withTeamDb<T>(home: string, work: (db: TeamDb) => T): T {
  const db = TeamDb.open(home);
  try {
    return work(db);
  } finally {
    db.close();
  }
}

function isBusy(error: unknown): boolean {
  return error instanceof Error && /database is locked|SQLITE_BUSY/i.test(error.message);
}

const sleeper = new Int32Array(new SharedArrayBuffer(4));

/** A short synchronous pause between lock retries (the connection is synchronous anyway). */
function pause(ms: number): void {
  Atomics.wait(sleeper, 0, 0, ms);
}
