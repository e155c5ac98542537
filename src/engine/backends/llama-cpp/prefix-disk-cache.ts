/**
 * The prefix cache's disk tier for one model: sequence states saved under `<dir>/<key name>/`, found by the longest
 * common prefix of their tokens with a prompt, loaded into a sequence after validation. Whatever goes wrong with a
 * file (another model's, truncated, corrupt, a full disk) costs a warning and the file, never a crash or a wrong
 * answer: the request then evaluates its prompt as if nothing were cached.
 */
import { createHash } from "node:crypto";
import { mkdir, readdir, rename, rm, stat, utimes, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { LlamaContextSequence } from "node-llama-cpp";
import { enforceDiskBudget } from "./prefix-disk-budget.js";
import { nameOfKey, type PrefixCacheKey } from "./prefix-cache-key.js";
import { checkStateFile, checksumFile, readPrefixRecord, recordPath, removePrefixFiles, statePath, type PrefixRecord } from "./prefix-state-file.js";
import { isProcessAlive } from "../../../lib/process-alive.js";
import type { PrefixDiskSettings } from "../../engine-options.js";

/** Settings of the disk tier. */
type PrefixDiskOptions = Required<PrefixDiskSettings>;

export const DEFAULT_DISK_MIN_TOKENS = 1024;
const ORPHAN_AGE_MS = 60_000;

/** A saved prefix known to this process. */
interface DiskEntry { base: string; tokens: number[]; bytes: number }

/**
 * A whole state is worth writing (before an erase) or reading (instead of the prefix already in RAM) for this share
 * of the disk tier's minimum tokens: a few dozen tokens of a diverging reply are not worth seconds of file I/O.
 */
const STATE_WORTH_SHARE = 8;

/** The best saved prefix for a prompt. */
export interface DiskMatch { entry: DiskEntry; shared: number }

export class PrefixDiskCache {
  private readonly entries = new Map<string, DiskEntry>();

  private constructor(private readonly folder: string, private readonly key: PrefixCacheKey, readonly options: PrefixDiskOptions) {}

  /** Opens (creating) this key's folder and indexes its records; unreadable or foreign records are removed. */
  static async open(key: PrefixCacheKey, settings: PrefixDiskSettings): Promise<PrefixDiskCache> {
    const warn = settings.warn ?? ((message: string) => void process.stderr.write(`kiln: ${message}\n`));
    const options = { ...settings, minTokens: settings.minTokens ?? DEFAULT_DISK_MIN_TOKENS, warn };
    const cache = new PrefixDiskCache(join(options.dir, nameOfKey(key)), key, options);
    await mkdir(cache.folder, { recursive: true });
    await cache.index();
    return cache;
  }

  /** Bytes and files of this model's saved states. */
  get stats(): { bytes: number; files: number } {
    let bytes = 0;
    for (const entry of this.entries.values()) bytes += entry.bytes;
    return { bytes, files: this.entries.size };
  }

  /** The saved prefix sharing the most leading tokens with `tokens`. */
  find(tokens: readonly number[]): DiskMatch | undefined {
    let best: DiskMatch | undefined;
    for (const entry of this.entries.values()) {
      const shared = commonPrefix(entry.tokens, tokens);
      if (shared > 0 && shared > (best?.shared ?? 0)) best = { entry, shared };
    }
    return best;
  }

  /** How many leading tokens of `tokens` some saved state already holds. */
  covered(tokens: readonly number[]): number {
    return this.find(tokens)?.shared ?? 0;
  }

  /** Whether a sequence holds at least minTokens tokens that no saved state has (saved once the context is idle). */
  worthSaving(sequence: LlamaContextSequence): boolean {
    const held = sequence.nextTokenIndex;
    return held >= this.options.minTokens && held - this.covered(sequence.contextTokens) >= this.options.minTokens;
  }

  /** Whether erasing a sequence's tokens from `keep` on loses enough unsaved tokens to save it first. */
  worthSavingBeforeErase(sequence: LlamaContextSequence, keep: number): boolean {
    const held = sequence.nextTokenIndex;
    return held >= this.options.minTokens && held - Math.max(keep, this.covered(sequence.contextTokens)) >= this.options.minTokens / STATE_WORTH_SHARE;
  }

  /** Whether a saved match is worth reading instead of the `inRam` tokens a sequence holds or copies. */
  worthLoading(match: DiskMatch, inRam: number): boolean {
    return match.shared - inRam >= this.options.minTokens / STATE_WORTH_SHARE;
  }

  /**
   * Saves the sequence's state (the caller owns the sequence meanwhile); saved states it extends are removed, then
   * the budget is enforced. False (with a warning) when the write fails, e.g. on a full disk.
   */
  async save(sequence: LlamaContextSequence): Promise<boolean> {
    const tokens = [...sequence.contextTokens] as number[];
    const base = join(this.folder, createHash("sha256").update(Uint32Array.from(tokens)).digest("hex").slice(0, 32));
    const partial = `${statePath(base)}.partial-${process.pid}`;
    try {
      const { fileSize } = await sequence.saveStateToFile(partial);
      const record: PrefixRecord = { version: 1, key: this.key, tokens, bytes: fileSize, crc32: await checksumFile(partial), savedAt: new Date().toISOString() };
      await rename(partial, statePath(base));
      // The record is written last: a state file without one is never loaded.
      await writeFile(`${recordPath(base)}.partial-${process.pid}`, JSON.stringify(record));
      await rename(`${recordPath(base)}.partial-${process.pid}`, recordPath(base));
      this.entries.set(base, { base, tokens, bytes: fileSize });
    } catch (error) {
      await rm(partial, { force: true }).catch(() => undefined);
      await removePrefixFiles(base);
      this.options.warn(`prefix cache: could not save ${tokens.length} tokens to ${base}: ${messageOf(error)}`);
      return false;
    }
    await this.removeExtendedBy(base, tokens);
    const removed = await enforceDiskBudget(this.options.dir, this.options.maxBytes).catch((error: unknown) => {
      this.options.warn(`prefix cache: could not enforce the disk budget: ${messageOf(error)}`);
      return [];
    });
    for (const gone of removed) this.entries.delete(gone);
    return this.entries.has(base);
  }

  /**
   * Loads a saved state into an empty sequence after checking it; a file that fails a check is removed with a
   * warning and false is returned (the sequence is left empty).
   */
  async load(entry: DiskEntry, sequence: LlamaContextSequence): Promise<boolean> {
    const record = await readPrefixRecord(entry.base);
    const problem = record ? await checkStateFile(entry.base, record, this.key) : "its record is missing or unreadable";
    if (!problem) {
      try {
        await sequence.loadStateFromFile(statePath(entry.base), { acceptRisk: true });
        if (commonPrefix(sequence.contextTokens, entry.tokens) === entry.tokens.length) {
          const now = new Date();
          await utimes(recordPath(entry.base), now, now).catch(() => undefined);
          return true;
        }
      } catch (error) {
        this.options.warn(`prefix cache: llama.cpp could not load ${entry.base}: ${messageOf(error)}`);
      }
      if (sequence.nextTokenIndex > 0) await sequence.eraseContextTokenRanges([{ start: 0, end: sequence.nextTokenIndex }]);
    }
    await this.forget(entry.base, problem ?? "it did not load");
    return false;
  }

  private async index(): Promise<void> {
    const names = await readdir(this.folder);
    for (const name of names.filter((n) => n.includes(".partial-") && !isProcessAlive(Number(n.split(".partial-")[1])))) {
      await rm(join(this.folder, name), { force: true });
    }
    for (const name of names.filter((n) => n.endsWith(".json"))) {
      const base = join(this.folder, name.slice(0, -".json".length));
      const record = await readPrefixRecord(base);
      if (!record) await this.forget(base, "its record is unreadable");
      else if (nameOfKey(record.key) !== nameOfKey(this.key)) await this.forget(base, "it was saved for another model or other context settings");
      else this.entries.set(base, { base, tokens: record.tokens, bytes: record.bytes });
    }
    // A state whose record never came (a crash between the two writes); a minute leaves another process time to finish.
    for (const name of names.filter((n) => n.endsWith(".state") && !names.includes(`${n.slice(0, -".state".length)}.json`))) {
      const path = join(this.folder, name);
      const info = await stat(path).catch(() => undefined);
      if (info && Date.now() - info.mtimeMs > ORPHAN_AGE_MS) await rm(path, { force: true });
    }
  }

  /** Drops saved states whose tokens are a prefix of a newer save: it serves every prompt they would. */
  private async removeExtendedBy(base: string, tokens: readonly number[]): Promise<void> {
    for (const entry of [...this.entries.values()]) {
      if (entry.base === base || commonPrefix(entry.tokens, tokens) < entry.tokens.length) continue;
      this.entries.delete(entry.base);
      await removePrefixFiles(entry.base);
    }
  }

  private async forget(base: string, why: string): Promise<void> {
    this.entries.delete(base);
    await removePrefixFiles(base);
    this.options.warn(`prefix cache: removed ${base}: ${why}`);
  }
}

/** How many leading tokens two lists share. */
export function commonPrefix(a: readonly number[], b: readonly number[]): number {
  const length = Math.min(a.length, b.length);
  let i = 0;
  while (i < length && a[i] === b[i]) i++;
  return i;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
