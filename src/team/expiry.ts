/** Parses `--expires`: a date (`2026-12-31`, 00:00 UTC of that day), a date-time, or a duration (`30d`, `12h`). */

const UNIT_MS: Record<string, number> = { m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

/** Unix milliseconds at which a key made at `now` expires; throws a readable error for anything else. */
export function parseExpiry(text: string, now = Date.now()): number {
  const value = text.trim();
  const duration = /^(\d+)\s*([mhdw])$/i.exec(value);
  const at = duration ? now + Number(duration[1]) * UNIT_MS[duration[2]!.toLowerCase()]! : parseDate(value);
  if (at === undefined) throw new Error(`invalid expiry "${text}": use a date (2026-12-31) or a duration (30d, 12h, 90m, 2w)`);
  if (at <= now) throw new Error(`expiry "${text}" is not in the future`);
  return at;
}

function parseDate(value: string): number | undefined {
  if (!/^\d{4}-\d{2}-\d{2}([T ][\d:.]+(Z|[+-]\d{2}:?\d{2})?)?$/.test(value)) return undefined;
  const dateOnly = /^\d{4}-\d{2}-\d{2}$/.test(value);
  const at = Date.parse(dateOnly ? `${value}T00:00:00Z` : value);
  if (Number.isNaN(at)) return undefined;
  // Date.parse rolls 2026-02-31 over into March; a calendar date must name a real day.
  if (dateOnly && new Date(at).toISOString().slice(0, 10) !== value) return undefined;
  return at;
}
