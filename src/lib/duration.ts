/**
 * Durations as Ollama's keep_alive writes them: a number of seconds (`300`, `0`, `-1`) or a Go-style duration
 * (`5m`, `1h30m`, `90s`, `500ms`). Any negative value means "forever".
 */

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** Milliseconds of a duration; -1 for any negative one (forever); undefined when malformed. */
export function parseDuration(value: string | number): number | undefined {
  if (typeof value === "number") return Number.isFinite(value) ? toMs(value * 1000) : undefined;
  const text = value.trim();
  if (/^[-+]?\d+(\.\d+)?$/.test(text)) return toMs(Number(text) * 1000);
  const match = /^([-+]?)((?:\d+(?:\.\d+)?(?:ms|s|m|h))+)$/.exec(text);
  if (!match) return undefined;
  let total = 0;
  for (const [, amount, unit] of match[2]!.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h)/g)) total += Number(amount) * UNITS[unit!]!;
  return toMs(match[1] === "-" ? -total : total);
}

function toMs(ms: number): number {
  return ms < 0 ? -1 : Math.round(ms);
}

/** "5m", "90s", "1h30m", "forever": how a duration in ms reads back. */
export function formatDuration(ms: number): string {
  if (ms < 0) return "forever";
  if (ms > 0 && ms < 1000) return `${ms}ms`;
  const seconds = Math.round(ms / 1000);
  const h = Math.floor(seconds / 3600);
  const m = Math.floor((seconds % 3600) / 60);
  const s = seconds % 60;
  return [h ? `${h}h` : "", m ? `${m}m` : "", s || (!h && !m) ? `${s}s` : ""].join("");
}
