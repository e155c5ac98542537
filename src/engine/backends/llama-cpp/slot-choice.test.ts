import { describe, expect, it } from "vitest";
import { chooseSlot, type CopyCosts, type SlotView } from "./slot-choice.js";

/** Slots named by index; each holds `held` tokens of which `common` are the prompt's start. */
function views(...slots: Array<Partial<SlotView<number>> & { held: number }>): SlotView<number>[] {
  return slots.map((slot, index) => ({ slot: index, busy: false, decoding: slot.busy ?? false, generating: false, common: 0, continues: false, lastUsed: index, ...slot }));
}

/** Copies of `least` tokens or more pay (by stream); moves pay when `moves`. */
const copyFrom = (least: number, moves = false): CopyCosts => ({
  prefixCopy: (tokens) => (tokens >= least ? "stream" : undefined),
  movePays: () => moves,
});
const never: CopyCosts = { prefixCopy: () => undefined, movePays: () => false };

describe("chooseSlot", () => {
  it("resumes a conversation in its own slot, with no copy, when it would lose nothing worth a copy", () => {
    // An agent's next turn: slot 1 holds the conversation (its reply re-tokenizes 2 tokens differently).
    const slots = views({ held: 0 }, { held: 4002, common: 4000 }, { held: 300, common: 25 });
    expect(chooseSlot(slots, 4100, copyFrom(16))).toEqual({ slot: 1 });
    // Its previous reply, resent in other tokens, leaves a tail worth a copy; the prompt extends the slot's last
    // prompt, so the tail is that reply, not another conversation: no copy elsewhere.
    const resent = views({ held: 0 }, { held: 4040, common: 3990, continues: true });
    expect(chooseSlot(resent, 4100, copyFrom(16))).toEqual({ slot: 1 });
  });

  it("copies another conversation's shared prefix into the slot that loses least, keeping that conversation", () => {
    // Slot 1 shares a 448-token system prompt and then holds 3,500 tokens of its own conversation.
    const slots = views({ held: 0 }, { held: 3948, common: 448 });
    expect(chooseSlot(slots, 460, copyFrom(16))).toEqual({ slot: 0, donor: { slot: 1, shared: 448, way: "stream" } });
    // Without copies (a GPU, where its tail costs little to evaluate again) the conversation's slot is taken.
    expect(chooseSlot(slots, 460, never)).toEqual({ slot: 1 });
    expect(chooseSlot(slots, 460)).toEqual({ slot: 1 });
  });

  it("copies a chat template's opening from the previous request's slot when a copy of that few tokens pays", () => {
    // One client's unique prompts: each shares 25 tokens with the one before (slot 2), below the reuse threshold.
    const slots = views({ held: 0 }, { held: 0 }, { held: 358, common: 25, lastUsed: 9 });
    expect(chooseSlot(slots, 230, copyFrom(16))).toEqual({ slot: 0, donor: { slot: 2, shared: 25, way: "stream" } });
    expect(chooseSlot(slots, 230, copyFrom(64))).toEqual({ slot: 0 });
  });

  it("copies from a generating sequence, never from one still loading or evaluating its prompt", () => {
    const generating = views({ held: 0 }, { held: 600, common: 448, busy: true, generating: true });
    expect(chooseSlot(generating, 460, copyFrom(16))).toEqual({ slot: 0, donor: { slot: 1, shared: 448, way: "stream" } });
    const evaluating = views({ held: 0 }, { held: 600, common: 448, busy: true, generating: false });
    expect(chooseSlot(evaluating, 460, copyFrom(16))).toEqual({ slot: 0 });
  });

  it("leaves the prompt's last two tokens out of a copy, and copies nothing when that leaves too little", () => {
    const slots = views({ held: 0 }, { held: 200, common: 100, busy: true, generating: true });
    expect(chooseSlot(slots, 101, copyFrom(16))).toEqual({ slot: 0, donor: { slot: 1, shared: 99, way: "stream" } });
    expect(chooseSlot(views({ held: 0 }, { held: 40, common: 20, busy: true, generating: true }), 21, copyFrom(16))).toEqual({ slot: 0, donor: { slot: 1, shared: 19, way: "stream" } });
    expect(chooseSlot(views({ held: 0 }, { held: 40, common: 20, busy: true, generating: true }), 17, copyFrom(16))).toEqual({ slot: 0 });
  });

  it("asks how to copy with the tokens the donor holds, and copies that way", () => {
    // By cells while the donor holds little, by stream when it holds nearly its whole stream (as the planner weighs it).
    const byHeld: CopyCosts = { prefixCopy: (_tokens, held) => (held <= 1000 ? "cells" : "stream"), movePays: () => false };
    const small = views({ held: 0 }, { held: 600, common: 448, busy: true, generating: true });
    expect(chooseSlot(small, 460, byHeld)).toEqual({ slot: 0, donor: { slot: 1, shared: 448, way: "cells" } });
    const large = views({ held: 0 }, { held: 3948, common: 448 });
    expect(chooseSlot(large, 460, byHeld)).toEqual({ slot: 0, donor: { slot: 1, shared: 448, way: "stream" } });
  });

  it("moves a free slot's cache aside so that a new request sits beside the busy slots, when a move pays", () => {
    // Long documents in 0, 2 and 4 (kept: they lose more than twice a short note), notes in 1 and 3, streams in 5–7:
    // the note slots lie apart from the streams, so slot 4's document moves into the least valuable, 1 (the older).
    const slots = views({ held: 930 }, { held: 180, lastUsed: 1 }, { held: 930 }, { held: 180, lastUsed: 3 }, { held: 930 },
      { held: 200, busy: true, generating: true }, { held: 200, busy: true, generating: true }, { held: 200, busy: true, generating: true });
    expect(chooseSlot(slots, 48, copyFrom(16, true))).toEqual({ slot: 4, moveTo: 1 });
    expect(chooseSlot(slots, 48, copyFrom(16, false))).toEqual({ slot: 1 });
    // The prompt's prefix still comes from a donor when one holds it: here the stream in 5.
    const shared = slots.map((view, i) => (i === 5 ? { ...view, common: 40 } : view));
    expect(chooseSlot(shared, 48, copyFrom(16, true))).toEqual({ slot: 4, moveTo: 1, donor: { slot: 5, shared: 40, way: "stream" } });
    // A slot that shares the prompt's prefix keeps the prompt; so does a slot already beside a busy one.
    const resumed = slots.map((view, i) => (i === 1 ? { ...view, common: 120, held: 180 } : view));
    expect(chooseSlot(resumed, 300, copyFrom(16, true))).toEqual({ slot: 1 });
    const besideFree = views({ held: 930 }, { held: 180 }, { held: 200, busy: true, generating: true });
    expect(chooseSlot(besideFree, 48, copyFrom(16, true))).toEqual({ slot: 1 });
  });

  it("places a request beside slots that take part in the steps, not beside one busy saving its state", () => {
    // Slot 0 is busy writing its long state to disk; 6 and 7 generate. Slot 1 lies beside slot 0 only, which shares no
    // pass: slot 5, beside the streams, takes the prompt (counted as busy neighbours, 0 had put it in 1: two passes).
    const slots = views({ held: 1356, busy: true, decoding: false }, { held: 170, lastUsed: 1 }, { held: 1357 }, { held: 170, lastUsed: 3 },
      { held: 1357 }, { held: 170, lastUsed: 5 }, { held: 200, busy: true, generating: true }, { held: 200, busy: true, generating: true });
    expect(chooseSlot(slots, 48, copyFrom(16, true))).toEqual({ slot: 5 });
  });

  it("keeps a prompt beside the decoding slots when the slot it shares a template's opening with holds a finished reply", () => {
    // Slot 3's request ended; its neighbours still generate. The next prompt shares 4 tokens with it, and its reply
    // is worth keeping: it moves to the empty slot 8 rather than the prompt going there, apart from the others.
    const gen = { held: 290, busy: true, generating: true };
    const slots = views(gen, gen, gen, { held: 291, common: 4 }, gen, gen, gen, gen, { held: 0 }, { held: 0 });
    expect(chooseSlot(slots, 230, copyFrom(2, true))).toEqual({ slot: 3, moveTo: 8 });
    // Without moves the reply is kept where it is and the prompt goes to slot 8, its opening copied there.
    expect(chooseSlot(slots, 230, copyFrom(2, false))).toEqual({ slot: 8, donor: { slot: 3, shared: 4, way: "stream" } });
  });

  it("fills a gap between decoding slots before growing the edge of their run", () => {
    // Eight streams of unique prompts: 2–4 and 7–9 generate, 5 and 6 hold finished replies, 10 a shorter one. Slot 10
    // loses a few tokens less, but 8 and 9 would then stay a run apart from 2–4 (two passes a step); 5 joins them.
    const gen = { held: 300, common: 32, busy: true, generating: true };
    const slots = views({ held: 317, common: 29 }, { held: 358, common: 29 }, gen, gen, gen, { held: 358, common: 32 }, { held: 358, common: 32 },
      gen, gen, gen, { held: 326, common: 32 }, { held: 0 });
    expect(chooseSlot(slots, 230, copyFrom(16, true))).toEqual({ slot: 5 });
    expect(chooseSlot(slots, 230)).toEqual({ slot: 5 });
    // A move goes to a gap too: the empty slot 5 loses least but lies apart from the streams, so the prompt takes slot
    // 1 (between the streams in 0 and 3) and its document moves to 5, rather than slot 4's shorter one at the edge.
    const stream = { held: 200, busy: true, generating: true };
    const documents = views(stream, { held: 930 }, { held: 930 }, stream, { held: 900 }, { held: 0 }, { held: 0 });
    expect(chooseSlot(documents, 48, copyFrom(16, true))).toEqual({ slot: 1, moveTo: 5 });
  });

  it("waits when every slot is busy", () => {
    expect(chooseSlot(views({ held: 10, busy: true }), 50, copyFrom(16))).toBeUndefined();
  });
});
