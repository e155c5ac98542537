/**
 * Which free sequence of a context a prompt takes (see slot-pool.ts): the one sharing the longest real prefix with it;
 * without one, the one whose cache it would erase least, except that losses within a factor of two of each other
 * weigh the same and then a sequence next to busy ones goes first (llama.cpp decodes consecutive sequence ids in one
 * pass over the weights: batch-order.ts).
 */
/** Shared prefix tokens that make a cached sequence worth choosing; below it, the slot that loses least is taken. */
export const MIN_REUSE = 64;

/** A cache this short is re-evaluated within a step or two: losing it weighs no more than losing nothing. */
const SMALL_LOSS = 256;

const withinTwice = (a: number, b: number): boolean => a <= 2 * b && b <= 2 * a;

/** A free slot as a prompt would find it: tokens it shares, cached tokens it would erase, busy slots beside it. */
export interface Candidate<S extends { lastUsed: number } = { lastUsed: number }> {
  slot: S;
  shared: number;
  lost: number;
  busyNeighbours: number;
}

/** Whether `a` is the better slot for the prompt than `b`. */
export function ranksAbove(a: Candidate, b: Candidate): boolean {
  if (a.shared !== b.shared) return a.shared > b.shared;
  // Erasing 230 tokens or 358 (or none) costs about the same, while a slot next to busy ones saves a pass over the
  // weights at every step of the request: only a loss beyond twice the other's (each counted as at least SMALL_LOSS
  // tokens) outranks adjacency.
  if (!withinTwice(Math.max(a.lost, SMALL_LOSS), Math.max(b.lost, SMALL_LOSS))) return a.lost < b.lost;
  if (a.busyNeighbours !== b.busyNeighbours) return a.busyNeighbours > b.busyNeighbours;
  if (a.lost !== b.lost) return a.lost < b.lost;
  return a.slot.lastUsed < b.slot.lastUsed;
}
