/**
 * What goes into each decode batch, and in which order. llama.cpp splits a batch that spans several sequences of a
 * per-sequence KV cache (node-llama-cpp's layout) into micro-batches of consecutive, increasing sequence ids, each
 * a full pass over the weights; node-llama-cpp adds sequences in the order they asked for a step, which after a few
 * awaits is not id order, so an 8-sequence step ran as two or three passes. This strategy puts the batch in sequence
 * order, and gives every queued sequence one token before any prompt gets more, so generating sequences are never
 * held back by a long prompt (which fills the rest of the batch).
 */
import type { BatchItem, LlamaContext, PrioritizedBatchItem } from "node-llama-cpp";

export type BatchStrategy = (input: { items: readonly BatchItem[]; size: number }) => PrioritizedBatchItem[];

/** One token for each item in order, then the batch's remaining room to the items in order. */
export const oneTokenEachThenFill: BatchStrategy = ({ items, size }) => {
  let left = size;
  const chosen: PrioritizedBatchItem[] = [];
  for (const item of items) {
    if (left <= 0) break;
    chosen.push({ item, processAmount: 1 });
    left--;
  }
  for (const entry of chosen) {
    const more = Math.min(entry.item.tokens.length - 1, left);
    entry.processAmount += more;
    left -= more;
  }
  return chosen;
};

/** The sequence id behind each queued item (node-llama-cpp's internal queue of the pinned 3.x release). */
function sequenceIds(context: LlamaContext | undefined): Map<readonly unknown[], number> | undefined {
  const queued = (context as unknown as { _queuedDecodes?: Array<{ tokens: readonly unknown[]; sequenceId: number }> } | undefined)?._queuedDecodes;
  if (!Array.isArray(queued)) return undefined;
  return new Map(queued.map((decode) => [decode.tokens, decode.sequenceId]));
}

/**
 * Wraps `strategy` (default: oneTokenEachThenFill) so it sees the items in sequence order. `context` is read at
 * dispatch time (the strategy is created before the context exists). Without the internal queue the order is kept.
 */
export function sequenceOrdered(context: () => LlamaContext | undefined, strategy: BatchStrategy = oneTokenEachThenFill): BatchStrategy {
  return ({ items, size }) => {
    const ids = sequenceIds(context());
    const ordered = ids ? [...items].sort((a, b) => (ids.get(a.tokens) ?? 0) - (ids.get(b.tokens) ?? 0)) : items;
    return strategy({ items: ordered, size });
  };
}
