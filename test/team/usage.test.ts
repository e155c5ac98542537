import { spawn } from "node:child_process";
import { mkdirSync, rmdirSync } from "node:fs";
import { setTimeout as pause } from "node:timers/promises";
import { afterEach, describe, expect, it } from "vitest";
import { createKey, listKeys } from "../../src/team/key-store.js";
import { TeamDb } from "../../src/team/team-db.js";
import { queryUsage, UsageLedger } from "../../src/team/usage-ledger.js";
import { makeHome, runKiln } from "../helpers/team-cli.js";

const opened: TeamDb[] = [];
afterEach(() => opened.splice(0).forEach((db) => db.close()));

function open(home: string): TeamDb {
  const db = TeamDb.open(home);
  opened.push(db);
  return db;
}

const DAY1 = Date.parse("2026-11-21T23:59:00Z");
const DAY2 = Date.parse("2026-11-22T00:01:00Z");

describe("UsageLedger", () => {
  it("adds requests up per key, model and UTC day, and keeps what was pending at close", async () => {
    const home = makeHome();
    const db = open(home);
    const { stored } = createKey(db, { name: "team" });
    let now = DAY1;
    const ledger = new UsageLedger(db, () => now);
    ledger.record(stored.id, "m1", { inputTokens: 10, cachedInputTokens: 4, outputTokens: 3 });
    ledger.record(stored.id, "m1", { inputTokens: 20, cachedInputTokens: 0, outputTokens: 5 });
    ledger.record("static:1", "m1", { inputTokens: 7, cachedInputTokens: 0, outputTokens: 1 });
    await ledger.flush();
    now = DAY2;
    ledger.record(stored.id, "m1", { inputTokens: 1, cachedInputTokens: 1, outputTokens: 1 });
    ledger.record(stored.id, "m2", { inputTokens: 2, cachedInputTokens: 0, outputTokens: 2 });
    await ledger.close();
    db.close();

    const reopened = open(home);
    expect(queryUsage(reopened)).toEqual([
      { day: "2026-11-21", keyId: stored.id, keyName: "team", model: "m1", requests: 2, inputTokens: 30, cachedInputTokens: 4, outputTokens: 8 },
      { day: "2026-11-21", keyId: "static:1", model: "m1", requests: 1, inputTokens: 7, cachedInputTokens: 0, outputTokens: 1 },
      { day: "2026-11-22", keyId: stored.id, keyName: "team", model: "m1", requests: 1, inputTokens: 1, cachedInputTokens: 1, outputTokens: 1 },
      { day: "2026-11-22", keyId: stored.id, keyName: "team", model: "m2", requests: 1, inputTokens: 2, cachedInputTokens: 0, outputTokens: 2 },
    ]);
    expect(queryUsage(reopened, { key: "team", since: "2026-11-22" }).map((row) => row.model)).toEqual(["m1", "m2"]);
    expect(queryUsage(reopened, { key: "static:1" })).toHaveLength(1);
    expect(queryUsage(reopened, { key: "nobody" })).toEqual([]);
  });

  it("writes last-used times of keys with the batch", async () => {
    const db = open(makeHome());
    const { stored } = createKey(db, { name: "k" });
    const ledger = new UsageLedger(db, () => DAY2);
    ledger.touchKey(stored.id);
    expect(listKeys(db)[0]!.lastUsedAt).toBeUndefined();
    await ledger.close();
    expect(listKeys(db)[0]!.lastUsedAt).toBe(DAY2);
  });

  it("writes on a thread of its own: a database held busy does not hold the event loop", async () => {
    const db = open(makeHome());
    const ledger = new UsageLedger(db);
    ledger.record("static:1", "m", { inputTokens: 3, cachedInputTokens: 0, outputTokens: 2 });
    // Another process holds the database (node-sqlite3-wasm locks it with this directory) until a timer of this
    // thread lets go: a write on this thread would wait for the lock with the timer unable to run.
    const lock = `${db.path}.lock`;
    mkdirSync(lock);
    let released = false;
    setTimeout(() => {
      rmdirSync(lock);
      released = true;
    }, 200);
    await ledger.flush();
    expect(released).toBe(true);
    expect(queryUsage(db)).toMatchObject([{ keyId: "static:1", requests: 1, inputTokens: 3, outputTokens: 2 }]);
    await ledger.close();
  });

  it("shares the database file with a process writing keys at the same time", async () => {
    const home = makeHome();
    const db = open(home);
    const ledger = new UsageLedger(db);
    const writer = spawn(process.execPath, ["--input-type=module", "-e", WRITE_KEYS, home], { stdio: ["ignore", "ignore", "pipe"] });
    let stderr = "";
    writer.stderr.on("data", (chunk) => (stderr += chunk));
    const exited = new Promise<number | null>((resolve) => writer.on("exit", resolve));
    let flushes = 0;
    while (writer.exitCode === null && flushes < 5000) {
      ledger.record("static:1", "m", { inputTokens: 1, cachedInputTokens: 0, outputTokens: 1 });
      await ledger.flush();
      flushes += 1;
      // Hundreds of flushes a second (a server flushes once a second): still contended, but a waiting writer gets
      // its turn instead of being starved by a loop that takes the lock again the instant it lets go.
      await pause(2);
    }
    expect(await exited, stderr.slice(-1500)).toBe(0);
    await ledger.close();
    expect(listKeys(db)).toHaveLength(20);
    expect(queryUsage(db)[0]).toMatchObject({ requests: flushes, inputTokens: flushes, outputTokens: flushes });
  });
});

/** A second process creating 20 keys, one transaction each, through the built key store. */
const WRITE_KEYS = `
const { TeamDb } = await import(${JSON.stringify(new URL("../../dist/team/team-db.js", import.meta.url).href)});
const { createKey } = await import(${JSON.stringify(new URL("../../dist/team/key-store.js", import.meta.url).href)});
const db = TeamDb.open(process.argv[1]);
for (let i = 0; i < 20; i++) createKey(db, { name: "writer-" + i });
db.close();
`;

describe("kiln usage (real process)", () => {
  it("prints rows with totals, filters by key and day, and prints JSON", async () => {
    const home = makeHome();
    const db = open(home);
    const { stored } = createKey(db, { name: "ci" });
    const ledger = new UsageLedger(db, () => DAY2);
    ledger.record(stored.id, "smollm2-135m", { inputTokens: 120, cachedInputTokens: 64, outputTokens: 16 });
    ledger.record("static:1", "smollm2-135m", { inputTokens: 5, cachedInputTokens: 0, outputTokens: 2 });
    await ledger.close();

    const table = await runKiln(home, ["usage"]);
    expect(table.code).toBe(0);
    const lines = table.stdout.trim().split("\n");
    expect(lines[0]).toMatch(/^DAY\s+KEY\s+MODEL\s+REQUESTS\s+INPUT\s+CACHED\s+OUTPUT$/);
    expect(lines[1]).toMatch(/^2026-11-22\s+ci\s+smollm2-135m\s+1\s+120\s+64\s+16$/);
    expect(lines[2]).toMatch(/^2026-11-22\s+static:1\s+smollm2-135m\s+1\s+5\s+0\s+2$/);
    expect(lines[3]).toMatch(/^total\s+2\s+125\s+64\s+18$/);

    const json = await runKiln(home, ["usage", "--key", "ci", "--since", "2026-11-22", "--json"]);
    expect(JSON.parse(json.stdout)).toEqual([
      { day: "2026-11-22", keyId: stored.id, keyName: "ci", model: "smollm2-135m", requests: 1, inputTokens: 120, cachedInputTokens: 64, outputTokens: 16 },
    ]);
    expect((await runKiln(home, ["usage", "--since", "2026-11-23"])).stdout.trim()).toBe("No usage recorded.");
  });
});
