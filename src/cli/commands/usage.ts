import { InvalidArgumentError, type Command } from "commander";
import { formatFlagErrors } from "../options.js";
import { defaultTeamIo, loadTeam, type TeamCommandIo } from "./keys.js";

interface UsageFlags {
  key?: string;
  since?: string;
  json?: boolean;
}

/** Registers `kiln usage`: tokens per key, model and UTC day, as recorded by `kiln serve`. */
export function registerUsage(program: Command, io: TeamCommandIo = defaultTeamIo): void {
  const command = program
    .command("usage")
    .description("show token usage per key, model and day (UTC) recorded by `kiln serve`")
    .option("--key <id-or-name>", "only this key (its id, or a stored key's name)")
    .option("--since <YYYY-MM-DD>", "only from this day on (UTC)", parseDay)
    .option("--json", "print JSON")
    .action(async (flags: UsageFlags) => {
      const [{ withTeamDb }, , { formatUsageTable, toUsageJson }, home] = await loadTeam(io);
      const { queryUsage } = await import("../../team/usage-ledger.js");
      const rows = withTeamDb(home, (db) => queryUsage(db, { key: flags.key, since: flags.since }));
      io.out(flags.json ? JSON.stringify(rows.map(toUsageJson), null, 2) : formatUsageTable(rows));
    });
  formatFlagErrors(command);
}

function parseDay(value: string): string {
  const day = value.trim();
  const at = Date.parse(`${day}T00:00:00Z`);
  // Date.parse rolls 2026-02-31 over into March: a day must come back unchanged.
  const valid = /^\d{4}-\d{2}-\d{2}$/.test(day) && !Number.isNaN(at) && new Date(at).toISOString().slice(0, 10) === day;
  if (!valid) throw new InvalidArgumentError("expected a date as YYYY-MM-DD");
  return day;
}
