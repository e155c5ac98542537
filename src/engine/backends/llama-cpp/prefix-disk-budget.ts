/**
 * The disk tier's size bound, shared by every model under one cache folder: when the state files add up to more
 * than the budget, the least recently used go first (a record's modification time is its last use).
 */
import { readdir, stat } from "node:fs/promises";
import { join } from "node:path";
import { recordPath, removePrefixFiles, statePath } from "./prefix-state-file.js";

/** One saved prefix as the budget sees it. */
interface SavedPrefix { base: string; bytes: number; lastUsed: number }

/** Removes least recently used prefixes under `root` until they fit in `maxBytes`; returns the bases removed. */
export async function enforceDiskBudget(root: string, maxBytes: number): Promise<string[]> {
  const saved = await listSavedPrefixes(root);
  let total = saved.reduce((sum, entry) => sum + entry.bytes, 0);
  const removed: string[] = [];
  for (const entry of saved.sort((a, b) => a.lastUsed - b.lastUsed)) {
    if (total <= maxBytes) break;
    await removePrefixFiles(entry.base);
    total -= entry.bytes;
    removed.push(entry.base);
  }
  return removed;
}

async function listSavedPrefixes(root: string): Promise<SavedPrefix[]> {
  const folders = await readdir(root).catch(() => [] as string[]);
  const saved: SavedPrefix[] = [];
  for (const folder of folders) {
    const names = await readdir(join(root, folder)).catch(() => [] as string[]);
    for (const name of names.filter((n) => n.endsWith(".json"))) {
      const base = join(root, folder, name.slice(0, -".json".length));
      const [record, state] = await Promise.all([stat(recordPath(base)).catch(() => undefined), stat(statePath(base)).catch(() => undefined)]);
      if (record && state) saved.push({ base, bytes: state.size + record.size, lastUsed: record.mtimeMs });
    }
  }
  return saved;
}
