import { existsSync, mkdirSync, readdirSync, readFileSync, utimesSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createKey, hashKey, hasLiveKeys, listKeys, revokeKey, watchStoredKeys } from "../../src/team/key-store.js";
import { StoredKeyVerifier } from "../../src/team/key-verifier.js";
import { TeamDb } from "../../src/team/team-db.js";
import { makeHome, runKiln } from "../helpers/team-cli.js";

const opened: TeamDb[] = [];
afterEach(() => opened.splice(0).forEach((db) => db.close()));

function open(home: string): TeamDb {
  const db = TeamDb.open(home);
  opened.push(db);
  return db;
}

/** Every byte kiln keeps under its home: the database and any lock or journal beside it. */
function homeBytes(home: string): string {
  return readdirSync(home, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => readFileSync(join(entry.parentPath, entry.name)).toString("latin1"))
    .join("");
}

describe("kiln keys (real process, real database file)", () => {
  it("prints a new key once; list shows it only by prefix; the database holds only its hash", async () => {
    const home = makeHome();
    const created = await runKiln(home, ["keys", "create", "--name", "alice", "--models", "smollm2-135m,other", "--rpm", "5", "--tpm", "900", "--expires", "30d"]);
    expect(created.code).toBe(0);
    const key = created.stdout.trim();
    expect(key).toMatch(/^kiln-[1-9A-HJ-NP-Za-km-z]{32,}$/);
    expect(created.stderr).toContain('Created key "alice"');

    const table = await runKiln(home, ["keys", "list"]);
    const json = await runKiln(home, ["keys", "list", "--json"]);
    for (const output of [table.stdout, table.stderr, json.stdout, json.stderr]) expect(output).not.toContain(key);
    expect(table.stdout).toMatch(/alice\s+key_\w+\s+kiln-\w{7}…\s+smollm2-135m,other\s+5\s+900/);
    const [listed] = JSON.parse(json.stdout) as Array<Record<string, unknown>>;
    expect(listed).toMatchObject({ name: "alice", prefix: key.slice(0, 12), models: ["smollm2-135m", "other"], rpm: 5, tpm: 900, status: "active", revokedAt: null, lastUsedAt: null });
    expect(Date.parse(String(listed!.expiresAt)) - Date.parse(String(listed!.createdAt))).toBeGreaterThan(29 * 86_400_000);

    const bytes = homeBytes(home);
    expect(bytes).not.toContain(key);
    expect(bytes).not.toContain(key.slice(12));
    expect(bytes).toContain(hashKey(key));
  });

  it("revokes by name or id, refuses unknown keys, duplicate live names and bad flags with exit code 1", async () => {
    const home = makeHome();
    await runKiln(home, ["keys", "create", "--name", "a"]);
    await runKiln(home, ["keys", "create", "--name", "b"]);
    const duplicate = await runKiln(home, ["keys", "create", "--name", "a"]);
    expect(duplicate).toMatchObject({ code: 1, stdout: "" });
    expect(duplicate.stderr).toContain('a live key named "a" already exists');

    const [, b] = JSON.parse((await runKiln(home, ["keys", "list", "--json"])).stdout) as Array<{ id: string }>;
    expect((await runKiln(home, ["keys", "revoke", "a"])).stdout).toContain('Revoked key "a"');
    expect((await runKiln(home, ["keys", "revoke", b!.id])).stdout).toContain('Revoked key "b"');
    const states = JSON.parse((await runKiln(home, ["keys", "list", "--json"])).stdout) as Array<{ status: string; revokedAt: string | null }>;
    expect(states.map((state) => state.status)).toEqual(["revoked", "revoked"]);
    expect(states.every((state) => state.revokedAt !== null)).toBe(true);

    // A revoked name is free again.
    expect((await runKiln(home, ["keys", "create", "--name", "a"])).code).toBe(0);
    const unknown = await runKiln(home, ["keys", "revoke", "nobody"]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('no key with id or name "nobody"');
    for (const flags of [["--rpm", "0"], ["--expires", "2001-01-01"]]) {
      const bad = await runKiln(home, ["keys", "create", "--name", "z", ...flags]);
      expect(bad.code).toBe(1);
      expect(bad.stderr).toMatch(/^kiln: /);
    }
    expect(listKeys(open(home)).map((key) => key.name)).toEqual(["a", "b", "a"]);
  });
});

describe("StoredKeyVerifier", () => {
  it("sees keys created and revoked by another process, from the next lookup", async () => {
    const home = makeHome();
    const verifier = new StoredKeyVerifier(open(home));
    const created = await runKiln(home, ["keys", "create", "--name", "scoped", "--models", "m1", "--rpm", "3"]);
    const key = created.stdout.trim();
    expect(verifier.verify(key)).toMatchObject({ name: "scoped", models: ["m1"] });
    const principal = verifier.verify(key)!;
    expect(principal.keyId).toMatch(/^key_/);
    expect(verifier.limitsOf(principal.keyId)).toEqual({ rpm: 3, tpm: undefined });

    expect((await runKiln(home, ["keys", "revoke", "scoped"])).code).toBe(0);
    expect(verifier.verify(key)).toBeUndefined();
    expect(verifier.verify(`${key}x`)).toBeUndefined();
  });

  it("refuses a key once it has expired", () => {
    const home = makeHome();
    const db = open(home);
    let now = Date.parse("2026-11-22T00:00:00Z");
    const { key } = createKey(db, { name: "short", expiresAt: now + 3_600_000 }, now);
    const verifier = new StoredKeyVerifier(db, { clock: () => now });
    expect(verifier.verify(key)?.name).toBe("short");
    now += 3_600_000;
    expect(verifier.verify(key)).toBeUndefined();
  });

  it("tells whether any key is live", () => {
    const db = open(makeHome());
    const now = Date.parse("2026-11-22T00:00:00Z");
    expect(hasLiveKeys(db, now)).toBe(false);
    createKey(db, { name: "soon-gone", expiresAt: now + 1000 }, now);
    expect(hasLiveKeys(db, now)).toBe(true);
    expect(hasLiveKeys(db, now + 1000)).toBe(false);
    createKey(db, { name: "revoked" }, now);
    revokeKey(db, "revoked", now);
    expect(hasLiveKeys(db, now + 1000)).toBe(false);
  });

  it("reports each accepted stored key as used", () => {
    const db = open(makeHome());
    const { key, stored } = createKey(db, { name: "k" });
    const used: string[] = [];
    const verifier = new StoredKeyVerifier(db, { onUse: (id) => used.push(id) });
    verifier.verify(key);
    verifier.verify("kiln-unknown");
    revokeKey(db, "k");
    verifier.verify(key);
    expect(used).toEqual([stored.id]);
  });
});

describe("watchStoredKeys", () => {
  it("reads the table again only once the database file changed, and stays true once a key was stored", async () => {
    const home = makeHome();
    const db = open(home);
    const reads = vi.spyOn(db, "get");
    const stored = watchStoredKeys(db);
    for (let i = 0; i < 5; i++) expect(stored()).toBe(false);
    expect(reads).toHaveBeenCalledTimes(1);
    // Another process creates a key: its commit changes the file, so the next question reads the table.
    expect((await runKiln(home, ["keys", "create", "--name", "elsewhere"])).code).toBe(0);
    expect(stored()).toBe(true);
    expect(reads).toHaveBeenCalledTimes(2);
    expect((await runKiln(home, ["keys", "revoke", "elsewhere"])).code).toBe(0);
    for (let i = 0; i < 5; i++) expect(stored()).toBe(true);
    expect(reads).toHaveBeenCalledTimes(2);
  });
});

describe("TeamDb", () => {
  it("clears a lock left behind by a process that died holding it", () => {
    const home = makeHome();
    const db = open(home);
    createKey(db, { name: "before" });
    const lock = `${db.path}.lock`;
    mkdirSync(lock);
    const longAgo = new Date(Date.now() - 60_000);
    utimesSync(lock, longAgo, longAgo);
    createKey(db, { name: "after" });
    expect(listKeys(db).map((key) => key.name)).toEqual(["before", "after"]);
    expect(existsSync(lock)).toBe(false);
  });
});
