import { InvalidArgumentError, type Command } from "commander";
import { parseExpiry } from "../../team/expiry.js";
import { formatFlagErrors, parseNumberIn } from "../options.js";
import { UsageError } from "../report-error.js";

/** Where the keys and usage commands read and write; tests swap the home and capture the output. */
export interface TeamCommandIo {
  /** The kiln home (default: KILN_HOME, else ~/.kiln). */
  home?(): string;
  out(text: string): void;
  err(text: string): void;
}

export const defaultTeamIo: TeamCommandIo = {
  out: (text) => void process.stdout.write(`${text}\n`),
  err: (text) => void process.stderr.write(`${text}\n`),
};

interface CreateFlags {
  name: string;
  models?: string[];
  rpm?: number;
  tpm?: number;
  expires?: number;
  json?: boolean;
}

/** Registers `kiln keys create|list|revoke`: API keys for `kiln serve`, kept as hashes in KILN_HOME/kiln.db. */
export function registerKeys(program: Command, io: TeamCommandIo = defaultTeamIo): void {
  // Subcommands inherit the error formatting, so their flag errors point at `kiln keys --help`.
  const keys = formatFlagErrors(program.command("keys").description("create, list and revoke API keys for `kiln serve`"));
  keys
    .command("create")
    .description("create an API key and print it (it is shown only this once)")
    .requiredOption("--name <name>", "a name to recognise the key by (unique among live keys)", parseName)
    .option("--models <ids>", "comma-separated models the key may use (default: all)", parseList)
    .option("--rpm <n>", "requests per minute (default: unlimited)", parseNumberIn(1, 1e9, true))
    .option("--tpm <n>", "input + output tokens per minute (default: unlimited)", parseNumberIn(1, 1e12, true))
    .option("--expires <when>", "a date (2026-12-31, from 00:00 UTC) or a duration (30d, 12h, 90m, 2w)", parseExpiryFlag)
    .option("--json", "print the key and its record as JSON")
    .addHelpText("after", "\nExamples:\n  kiln keys create --name ci --models smollm2-135m --rpm 60 --expires 30d\n  export KILN_KEY=$(kiln keys create --name laptop)\n")
    .action(async (flags: CreateFlags) => {
      const [{ withTeamDb }, { createKey }, { toKeyJson }, home] = await loadTeam(io);
      const { key, stored } = withTeamDb(home, (db) =>
        createKey(db, { name: flags.name, models: flags.models, rpm: flags.rpm, tpm: flags.tpm, expiresAt: flags.expires }));
      if (flags.json) return io.out(JSON.stringify({ key, ...toKeyJson(stored, Date.now()) }, null, 2));
      io.err(`Created key "${stored.name}" (${stored.id}). Copy it now: it is not shown again.`);
      io.out(key);
    });
  keys
    .command("list")
    .description("list keys: name, id, prefix, models, limits, dates and status (never the key itself)")
    .option("--json", "print JSON")
    .action(async (flags: { json?: boolean }) => {
      const [{ withTeamDb }, { listKeys }, { toKeyJson, formatKeysTable }, home] = await loadTeam(io);
      const stored = withTeamDb(home, listKeys);
      const now = Date.now();
      io.out(flags.json ? JSON.stringify(stored.map((key) => toKeyJson(key, now)), null, 2) : formatKeysTable(stored, now));
    });
  keys
    .command("revoke")
    .description("revoke a key by id or name; a running server refuses it from its next request")
    .argument("<id-or-name>", "the key's id (key_…) or name")
    .action(async (idOrName: string) => {
      const [{ withTeamDb }, { revokeKey }, , home] = await loadTeam(io);
      const revoked = withTeamDb(home, (db) => revokeKey(db, idOrName));
      if (!revoked) throw new UsageError(`no key with id or name "${idOrName}"`, "run `kiln keys list` to see the keys");
      io.out(`Revoked key "${revoked.name}" (${revoked.id}).`);
    });
}

/** The team modules and the home folder, loaded only when a keys or usage command runs. */
export async function loadTeam(io: TeamCommandIo) {
  return Promise.all([
    import("../../team/team-db.js"),
    import("../../team/key-store.js"),
    import("../../team/team-tables.js"),
    io.home?.() ?? import("../../models/store.js").then((store) => store.kilnHome()),
  ]);
}

function parseName(value: string): string {
  const name = value.trim();
  if (!/^[\w.@:-][\w .@:-]{0,63}$/.test(name)) throw new InvalidArgumentError("use 1 to 64 letters, digits, spaces or . _ - @ :");
  return name;
}

function parseList(value: string): string[] {
  const items = value.split(",").map((item) => item.trim()).filter(Boolean);
  if (items.length === 0) throw new InvalidArgumentError("expected a comma-separated list of model ids");
  return items;
}

function parseExpiryFlag(value: string): number {
  try {
    return parseExpiry(value);
  } catch (error) {
    throw new InvalidArgumentError((error as Error).message);
  }
}
