/**
 * The team database schema as ordered migrations; `PRAGMA user_version` counts those applied. Append only:
 * a released migration never changes.
 */
export const MIGRATIONS: readonly string[] = [
  `CREATE TABLE api_keys (
     id TEXT PRIMARY KEY,
     name TEXT NOT NULL,
     hash TEXT NOT NULL UNIQUE,
     prefix TEXT NOT NULL,
     models TEXT,
     rpm INTEGER,
     tpm INTEGER,
     created_at INTEGER NOT NULL,
     last_used_at INTEGER,
     expires_at INTEGER,
     revoked_at INTEGER
   );
   CREATE INDEX api_keys_name ON api_keys (name);
   CREATE TABLE usage (
     day TEXT NOT NULL,
     key_id TEXT NOT NULL,
     model TEXT NOT NULL,
     requests INTEGER NOT NULL DEFAULT 0,
     input_tokens INTEGER NOT NULL DEFAULT 0,
     cached_input_tokens INTEGER NOT NULL DEFAULT 0,
     output_tokens INTEGER NOT NULL DEFAULT 0,
     PRIMARY KEY (day, key_id, model)
   );`,
];
