/**
 * Whether one more model fits the limits on what is loaded at once (a count and a memory budget), and which idle
 * models to unload first, least recently used first, so that it does. Models held by a request are never chosen.
 */

/** What the decision reads of each model that is loaded, loading or unloading. */
export interface Occupant {
  bytes: number;
  /** Idle, loaded and not pinned. */
  evictable: boolean;
  /** Higher for a more recent use. */
  useOrder: number;
}

/** The limits on what is loaded at once; absent: no limit. */
export interface RoomLimits {
  maxModels?: number;
  maxBytes?: number;
}

/**
 * The verdict for a model of `bytes` joining `occupants`: `fits` (load now), `evict` (unload these first), `wait`
 * (the models that would have to go are in use: room appears when they finish), or `never` (too large for the budget
 * even alone).
 */
export type Room<T> = { kind: "fits" } | { kind: "evict"; victims: T[] } | { kind: "wait" } | { kind: "never" };

export function findRoom<T extends Occupant>(occupants: T[], bytes: number, limits: RoomLimits): Room<T> {
  const maxModels = limits.maxModels ?? Infinity;
  const maxBytes = limits.maxBytes ?? Infinity;
  if (bytes > maxBytes) return { kind: "never" };
  const fits = (models: number, used: number) => models + 1 <= maxModels && used + bytes <= maxBytes;
  let models = occupants.length;
  let used = occupants.reduce((sum, occupant) => sum + occupant.bytes, 0);
  if (fits(models, used)) return { kind: "fits" };
  const victims: T[] = [];
  for (const candidate of occupants.filter((o) => o.evictable).sort((a, b) => a.useOrder - b.useOrder)) {
    victims.push(candidate);
    models -= 1;
    used -= candidate.bytes;
    if (fits(models, used)) return { kind: "evict", victims };
  }
  return { kind: "wait" };
}
