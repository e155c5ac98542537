/**
 * Stored API keys. A key is shown once, at creation; the database keeps only its SHA-256 hash (enough for a
 * random 40-character secret: nothing to guess from) and a short prefix so people can tell keys apart.
 */
import { createHash } from "node:crypto";
import { EngineError } from "../engine/index.js";
import { randomId } from "../lib/ids.js";
import type { Row, TeamDb } from "./team-db.js";

/** What `keys list` shows about a key: everything but the secret. */
export interface StoredKey {
  /** `key_…`: stable id used in logs and usage rows. */
  id: string;
  name: string;
  /** The first characters of the key, for recognising it (`kiln-AbC1234`). */
  prefix: string;
  /** Models the key may use; undefined = all. */
  models?: string[];
  /** Requests per minute; undefined = unlimited. */
  rpm?: number;
  /** Input + output tokens per minute; undefined = unlimited. */
  tpm?: number;
  /** Unix milliseconds. */
  createdAt: number;
  lastUsedAt?: number;
  expiresAt?: number;
  revokedAt?: number;
}

/** What `keys create` takes. */
export interface NewKey {
  name: string;
  models?: string[];
  rpm?: number;
  tpm?: number;
  expiresAt?: number;
}

/** Every key starts with this, so secret scanners and people recognise it. */
export const KEY_PREFIX = "kiln-";
const SECRET_LENGTH = 40;
const DISPLAY_LENGTH = KEY_PREFIX.length + 7;

/** The stored form of a key. */
export function hashKey(key: string): string {
  return createHash("sha256").update(key).digest("hex");
}

/** Creates a key; returns the secret (shown once) and what is stored. Names of live keys are unique. */
export function createKey(db: TeamDb, input: NewKey, now = Date.now()): { key: string; stored: StoredKey } {
  const key = `${KEY_PREFIX}${randomId(SECRET_LENGTH)}`;
  const stored: StoredKey = { id: `key_${randomId(16)}`, prefix: key.slice(0, DISPLAY_LENGTH), createdAt: now, ...input };
  db.transaction(() => {
    if (findLiveByName(db, input.name, now)) {
      throw new EngineError("invalid_request", `a live key named "${input.name}" already exists`, { param: "name" });
    }
    db.run(
      `INSERT INTO api_keys (id, name, hash, prefix, models, rpm, tpm, created_at, expires_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      [stored.id, stored.name, hashKey(key), stored.prefix, stored.models ? JSON.stringify(stored.models) : null,
        stored.rpm ?? null, stored.tpm ?? null, now, stored.expiresAt ?? null],
    );
  });
  return { key, stored };
}

/** Every key, oldest first. */
export function listKeys(db: TeamDb): StoredKey[] {
  return db.all("SELECT * FROM api_keys ORDER BY created_at, id").map(toStoredKey);
}

/** The key with this hash, whatever its state (the caller checks expiry and revocation). */
export function findKeyByHash(db: TeamDb, hash: string): StoredKey | undefined {
  const row = db.get("SELECT * FROM api_keys WHERE hash = ?", [hash]);
  return row ? toStoredKey(row) : undefined;
}

/** Whether any key is live at `now` (a server with none may leave auth off). */
export function hasLiveKeys(db: TeamDb, now = Date.now()): boolean {
  return db.get("SELECT 1 AS live FROM api_keys WHERE revoked_at IS NULL AND (expires_at IS NULL OR expires_at > ?) LIMIT 1", [now]) !== undefined;
}

/**
 * Whether any key was ever stored, live or not. Once one was, the server keeps asking for keys: revoking or
 * expiring the last key must lock it, never open it to everyone.
 */
export function hasStoredKeys(db: TeamDb): boolean {
  return db.get("SELECT 1 AS stored FROM api_keys LIMIT 1") !== undefined;
}

/**
 * hasStoredKeys as a server asks it, before every request: once true it stays true (keys are revoked, never deleted),
 * and until then the table is read again only when the database file has changed (`kiln keys create` in another
 * process commits to it), not at every request.
 */
export function watchStoredKeys(db: TeamDb): () => boolean {
  let known: { fingerprint: string; stored: boolean } | undefined;
  return () => {
    if (known?.stored) return true;
    const fingerprint = db.fingerprint();
    if (known?.fingerprint !== fingerprint) known = { fingerprint, stored: hasStoredKeys(db) };
    return known.stored;
  };
}

/** Revokes a key by id, or by the name of a live key. Returns the revoked key; undefined when none matched. */
export function revokeKey(db: TeamDb, idOrName: string, now = Date.now()): StoredKey | undefined {
  return db.transaction(() => {
    const row = db.get("SELECT * FROM api_keys WHERE id = ?", [idOrName]);
    const target = row ? toStoredKey(row) : findLiveByName(db, idOrName, now);
    if (!target) return undefined;
    if (target.revokedAt === undefined) db.run("UPDATE api_keys SET revoked_at = ? WHERE id = ?", [now, target.id]);
    return { ...target, revokedAt: target.revokedAt ?? now };
  });
}

/** Records when keys were last used (batched by the caller: one transaction for many keys). */
export function touchKeys(db: TeamDb, lastUsed: ReadonlyMap<string, number>): void {
  if (lastUsed.size === 0) return;
  db.transaction(() => {
    for (const [id, at] of lastUsed) {
      db.run("UPDATE api_keys SET last_used_at = max(coalesce(last_used_at, 0), ?) WHERE id = ?", [at, id]);
    }
  });
}

/** Whether a key can be used at `now`. */
export function isKeyLive(key: StoredKey, now: number): boolean {
  return key.revokedAt === undefined && (key.expiresAt === undefined || key.expiresAt > now);
}

function findLiveByName(db: TeamDb, name: string, now: number): StoredKey | undefined {
  return db.all("SELECT * FROM api_keys WHERE name = ?", [name]).map(toStoredKey).find((key) => isKeyLive(key, now));
}

function toStoredKey(row: Row): StoredKey {
  return dropUndefined({
    id: String(row.id),
    name: String(row.name),
    prefix: String(row.prefix),
    models: row.models === null ? undefined : (JSON.parse(String(row.models)) as string[]),
    rpm: optionalNumber(row.rpm),
    tpm: optionalNumber(row.tpm),
    createdAt: Number(row.created_at),
    lastUsedAt: optionalNumber(row.last_used_at),
    expiresAt: optionalNumber(row.expires_at),
    revokedAt: optionalNumber(row.revoked_at),
  });
}

function optionalNumber(value: Row[string]): number | undefined {
  return value === null || value === undefined ? undefined : Number(value);
}

function dropUndefined<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}
