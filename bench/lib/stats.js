/** Small statistics helpers for latency samples (milliseconds) and rates. */

/** Nearest-rank percentile (p in 0..100) of numbers; NaN for an empty list. */
export function percentile(values, p) {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank];
}

export function median(values) {
  return percentile(values, 50);
}

/** Rounds to a fixed number of decimals, keeping NaN/undefined as null for JSON. */
export function round(value, decimals = 1) {
  if (value === undefined || value === null || !Number.isFinite(value)) return null;
  const f = 10 ** decimals;
  return Math.round(value * f) / f;
}

/** a / b rounded, or null when either side is missing. */
export function ratio(a, b, decimals = 2) {
  if (!Number.isFinite(a) || !Number.isFinite(b) || b === 0) return null;
  return round(a / b, decimals);
}
