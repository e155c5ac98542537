/**
 * The usage ledger's writer thread (started by usage-ledger.ts): its own connection to the team database, so the
 * commit of a batch — SQLite's rollback journal, its syncs to disk and the lock directory, 1–24 ms each on a 2-core
 * VM — never holds the event loop, where once a second it delayed every stream's next decode step. A database
 * another process holds busy is waited for here too.
 */
import { parentPort, workerData } from "node:worker_threads";
import { TeamDb } from "./team-db.js";
import { writeBatch, type LedgerBatch } from "./usage-ledger.js";

/** A batch to write, numbered so its answer finds its caller. */
export interface WriteJob { id: number; batch: LedgerBatch }
/** Written (no error), or why not. */
export interface WriteReply { id: number; error?: string }

const port = parentPort;
if (port) {
  const db = TeamDb.open((workerData as { home: string }).home);
  port.on("message", ({ id, batch }: WriteJob) => {
    let reply: WriteReply;
    try {
      writeBatch(db, batch);
      reply = { id };
    } catch (error) {
      reply = { id, error: error instanceof Error ? error.message : String(error) };
    }
    port.postMessage(reply);
  });
}
