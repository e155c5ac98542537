/** What `kiln keys list` and `kiln usage` print: tables for people, plain objects for --json. */
import { isKeyLive, type StoredKey } from "./key-store.js";
import { formatTable } from "./text-table.js";
import type { UsageRow } from "./usage-ledger.js";

/** A key for --json: dates in ISO 8601, the state spelled out. Never the secret (the store has none). */
export function toKeyJson(key: StoredKey, now: number): Record<string, unknown> {
  return {
    id: key.id,
    name: key.name,
    prefix: key.prefix,
    models: key.models ?? null,
    rpm: key.rpm ?? null,
    tpm: key.tpm ?? null,
    createdAt: isoOrNull(key.createdAt),
    lastUsedAt: isoOrNull(key.lastUsedAt),
    expiresAt: isoOrNull(key.expiresAt),
    revokedAt: isoOrNull(key.revokedAt),
    status: keyStatus(key, now),
  };
}

/** "active", "revoked" or "expired". */
export function keyStatus(key: StoredKey, now: number): string {
  if (key.revokedAt !== undefined) return "revoked";
  return isKeyLive(key, now) ? "active" : "expired";
}

/** The `kiln keys list` table (times in UTC). */
export function formatKeysTable(keys: StoredKey[], now: number): string {
  if (keys.length === 0) return "No keys yet. Create one with `kiln keys create --name <name>`.";
  const rows = keys.map((key) => [
    key.name,
    key.id,
    `${key.prefix}…`,
    key.models?.join(",") ?? "all",
    key.rpm === undefined ? "-" : String(key.rpm),
    key.tpm === undefined ? "-" : String(key.tpm),
    shortTime(key.createdAt),
    shortTime(key.lastUsedAt),
    shortTime(key.expiresAt),
    keyStatus(key, now),
  ]);
  return formatTable(["NAME", "ID", "PREFIX", "MODELS", "RPM", "TPM", "CREATED", "LAST USED", "EXPIRES", "STATUS"], rows);
}

/** The `kiln usage` table, with a total row. */
export function formatUsageTable(rows: UsageRow[]): string {
  if (rows.length === 0) return "No usage recorded.";
  const total = rows.reduce(
    (sum, row) => ({ requests: sum.requests + row.requests, input: sum.input + row.inputTokens, cached: sum.cached + row.cachedInputTokens, output: sum.output + row.outputTokens }),
    { requests: 0, input: 0, cached: 0, output: 0 },
  );
  const cells = rows.map((row) => [row.day, row.keyName ?? row.keyId, row.model, ...[row.requests, row.inputTokens, row.cachedInputTokens, row.outputTokens].map(String)]);
  cells.push(["total", "", "", ...[total.requests, total.input, total.cached, total.output].map(String)]);
  return formatTable(["DAY", "KEY", "MODEL", "REQUESTS", "INPUT", "CACHED", "OUTPUT"], cells);
}

/** A usage row for --json. */
export function toUsageJson(row: UsageRow): Record<string, unknown> {
  return { ...row, keyName: row.keyName ?? null };
}

function isoOrNull(at: number | undefined): string | null {
  return at === undefined ? null : new Date(at).toISOString();
}

/** `2026-11-22 03:04` (UTC), or "-". */
function shortTime(at: number | undefined): string {
  return at === undefined ? "-" : new Date(at).toISOString().slice(0, 16).replace("T", " ");
}
