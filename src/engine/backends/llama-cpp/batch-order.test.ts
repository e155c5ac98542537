import { describe, expect, it } from "vitest";
import type { BatchItem, LlamaContext, Token } from "node-llama-cpp";
import { oneTokenEachThenFill, sequenceOrdered } from "./batch-order.js";

const item = (tokens: number): BatchItem => ({ tokens: Array.from({ length: tokens }, (_, i) => i as Token), logits: [], evaluationPriority: 5 });

describe("oneTokenEachThenFill", () => {
  it("gives every item one token, then the remaining room in order", () => {
    const [a, b, c] = [item(1), item(100), item(1)];
    const chosen = oneTokenEachThenFill({ items: [a, b, c], size: 50 });
    expect(chosen.map((entry) => [entry.item, entry.processAmount])).toEqual([[a, 1], [b, 48], [c, 1]]);
  });

  it("stops at the batch size when there are more items than room", () => {
    const chosen = oneTokenEachThenFill({ items: [item(3), item(3), item(3)], size: 2 });
    expect(chosen.map((entry) => entry.processAmount)).toEqual([1, 1]);
  });
});

describe("sequenceOrdered", () => {
  it("orders the items by the sequence id node-llama-cpp queued them for", () => {
    const items = [item(1), item(1), item(1)];
    const context = { _queuedDecodes: [{ tokens: items[0]?.tokens, sequenceId: 5 }, { tokens: items[1]?.tokens, sequenceId: 0 }, { tokens: items[2]?.tokens, sequenceId: 2 }] };
    const chosen = sequenceOrdered(() => context as unknown as LlamaContext)({ items, size: 8 });
    expect(chosen.map((entry) => entry.item)).toEqual([items[1], items[2], items[0]]);
  });

  it("keeps the order when the queue cannot be read", () => {
    const items = [item(1), item(2)];
    const chosen = sequenceOrdered(() => undefined)({ items, size: 8 });
    expect(chosen.map((entry) => entry.item)).toEqual(items);
  });
});
