/**
 * The sequences of one llama.cpp context, handed out with prefix affinity, so an agent that resends a growing
 * conversation only pays for the new suffix: which free sequence a prompt takes, and whether another sequence's
 * prefix is copied into it first, is slot-choice.ts's decision. The pool takes a fresh context's sequences in order,
 * so slot index and sequence id agree (llama.cpp decodes consecutive ids in one pass: batch-order.ts).
 *
 * With a disk tier, a prompt whose longest cached prefix is on disk loads that state into the slot first; long
 * sequences are saved when a request leaves many new tokens in them (once no sequence is generating, since a save
 * holds the context) and before their tokens are erased for another prompt.
 */
import type { LlamaContextSequence, Token } from "node-llama-cpp";
import type { CacheTier } from "../../events.js";
import type { PrefixDivergence } from "../../engine-options.js";
import { commonPrefix, type PrefixDiskCache } from "./prefix-disk-cache.js";
import { copyPrefix } from "./copy-prefix.js";
import { chooseSlot, MIN_REUSE, type CopyCosts, type Donor, type SlotChoice } from "./slot-choice.js";
import { generating, sharedPrefix, type Slot } from "./slot.js";

export interface SlotPoolOptions {
  /** false: every request starts from an empty sequence (for measuring what the cache saves). */
  prefixCache: boolean;
  /** The disk tier (only with prefixCache). */
  disk?: PrefixDiskCache;
  /** Turns tokens into text for the divergence excerpts. */
  detokenize(tokens: Token[]): string;
  /** Called when a prompt does not fully extend the chosen sequence's cached tokens. */
  onDivergence?(info: PrefixDivergence): void;
  /** What copies between sequences cost (the step planner); absent: never copies. */
  copies?: CopyCosts;
}

/** A sequence on loan, already trimmed: evaluate `prompt.slice(reusedTokens)` on it next. */
export interface SlotLease {
  sequence: LlamaContextSequence;
  /** Prompt tokens kept from the cache (at most promptTokens − 1: the last one is always re-evaluated for logits). */
  reusedTokens: number;
  /** Where the reused tokens came from; undefined when none were reused. */
  cacheTier?: CacheTier;
  release(): void;
}

export class SlotPool {
  private readonly slots: Slot[];
  private readonly waiting: Array<() => void> = [];
  private clock = 0;
  private flushing = Promise.resolve();

  constructor(sequences: LlamaContextSequence[], private readonly options: SlotPoolOptions) {
    this.slots = sequences.map((sequence) => ({ sequence, busy: false, lastUsed: 0, abandoned: false, pendingSave: false, saving: false, lending: 0, promptEnd: 0 }));
  }

  get size(): number { return this.slots.length; }
  get busy(): number { return this.slots.filter((slot) => slot.busy).length; }

  /**
   * Takes the best free sequence for `prompt` (waiting when all are busy, or when an aborted request's slot is
   * about to free with a longer prefix) and prepares it: loads a longer prefix from disk, erases the diverging tail.
   */
  async acquire(prompt: Token[], signal?: AbortSignal): Promise<SlotLease> {
    let choice = this.pickSlot(prompt);
    while (!choice) {
      await new Promise<void>((resolve) => this.waiting.push(resolve));
      choice = this.pickSlot(prompt);
    }
    const { slot, donor, moveTo } = choice;
    // Started before the slot's record becomes the new request's: the move carries the record to its cache's new slot.
    const moved = moveTo && this.move(slot, moveTo);
    slot.busy = true;
    slot.lastUsed = ++this.clock;
    slot.target = prompt;
    slot.promptEnd = prompt.length;
    const abandon = () => { slot.abandoned = true; };
    signal?.addEventListener("abort", abandon, { once: true });
    const release = () => {
      signal?.removeEventListener("abort", abandon);
      this.release(slot);
    };
    try {
      await moved;
      return { sequence: slot.sequence, ...(await this.prepare(slot, prompt, donor)), release };
    } catch (error) {
      release();
      throw error;
    }
  }

  /** Saves what is pending (at shutdown; no request runs). */
  async flush(): Promise<void> {
    await this.flushing;
    await this.saveIdle(true);
  }

  private pickSlot(prompt: Token[]): SlotChoice<Slot> | undefined {
    const cache = this.options.prefixCache;
    const views = this.slots.map((slot) => {
      const common = cache ? sharedPrefix(slot.sequence, prompt) : 0;
      const held = cache ? slot.sequence.nextTokenIndex : 0;
      const decoding = slot.busy && slot.target !== undefined;
      return { slot, busy: slot.busy, decoding, generating: decoding && generating(slot), common, held, continues: slot.promptEnd > 0 && common >= slot.promptEnd, lastUsed: slot.lastUsed };
    });
    const choice = chooseSlot(views, prompt.length, cache ? this.options.copies : undefined);
    // A client retrying after its own disconnect finds its abandoned prefill, and an agent's next turn finds its
    // conversation while it is being saved (right after the previous turn): wait for it rather than start over.
    const within = choice ? Math.max(choice.donor?.shared ?? 0, views.find((view) => view.slot === choice.slot)!.common) : 0;
    const freeing = cache && this.slots.some((slot) => slot.busy && this.heldFor(slot, prompt) > within);
    return freeing ? undefined : choice;
  }

  /** Prompt tokens a busy slot will hold once it frees (its abandoned prefill, or the tokens it is saving), if worth it. */
  private heldFor(slot: Slot, prompt: Token[]): number {
    const held = slot.saving ? sharedPrefix(slot.sequence, prompt) : slot.abandoned && slot.target ? commonPrefix(slot.target, prompt) : 0;
    return held >= MIN_REUSE ? held : 0;
  }

  private async prepare(slot: Slot, prompt: Token[], donor?: Donor<Slot>): Promise<{ reusedTokens: number; cacheTier?: CacheTier }> {
    if (!this.options.prefixCache) {
      await slot.sequence.clearHistory();
      return { reusedTokens: 0 };
    }
    let tier: CacheTier = "ram";
    const disk = this.options.disk;
    const onDisk = disk?.find(prompt);
    const inRam = donor?.shared ?? sharedPrefix(slot.sequence, prompt);
    if (onDisk && disk!.worthLoading(onDisk, inRam)) {
      await this.erase(slot, 0);
      if (await disk!.load(onDisk.entry, slot.sequence)) tier = "disk";
    } else if (donor) {
      await this.copyFrom(donor, slot, prompt);
    }
    const reusedTokens = await this.trimToPrompt(slot, prompt);
    return reusedTokens > 0 ? { reusedTokens, cacheTier: tier } : { reusedTokens };
  }

  /**
   * Copies the donor's prefix into the slot (saving what the slot held first, as an erase does); a copy of the stream
   * also evaluates the prompt's next token there at once, which performs it. The donor stays busy meanwhile, so no
   * request loads another state into it before its cache was copied.
   */
  private async copyFrom(donor: Donor<Slot>, slot: Slot, prompt: Token[]): Promise<void> {
    const lender = donor.slot;
    lender.busy = true;
    lender.lending++;
    try {
      await this.erase(slot, 0);
      if (await copyPrefix(slot.sequence, lender.sequence, donor.shared, donor.way) === "stream") {
        await slot.sequence.evaluateWithoutGeneratingNewTokens([prompt[donor.shared]!]);
      }
    } finally {
      // A lender whose own request ended meanwhile is freed (and saved) as its release would have.
      if (--lender.lending === 0 && lender.target === undefined) {
        lender.busy = false;
        this.freed(lender);
      }
    }
  }

  /**
   * Moves the cache of the slot a prompt took into another free slot (by cells) before the prompt trims it: that
   * conversation keeps its cache, and the prompt its place beside the busy slots. The target is busy meanwhile.
   */
  private async move(from: Slot, to: Slot): Promise<void> {
    const { lastUsed, promptEnd } = from;
    to.busy = true;
    try {
      await this.erase(to, 0);
      if (await copyPrefix(to.sequence, from.sequence, from.sequence.nextTokenIndex, "cells") === "cells") {
        Object.assign(to, { lastUsed, promptEnd, pendingSave: from.pendingSave });
        from.pendingSave = false;
      } else {
        await to.sequence.clearHistory();
      }
    } finally {
      to.busy = false;
      this.freed(to);
    }
  }

  /** Keeps the shared prefix (minus the last prompt token, whose logits we need) and erases the rest. */
  private async trimToPrompt(slot: Slot, prompt: Token[]): Promise<number> {
    const shared = sharedPrefix(slot.sequence, prompt);
    if (shared < slot.sequence.nextTokenIndex) this.reportDivergence(slot.sequence, prompt, shared);
    const keep = Math.min(shared, prompt.length - 1);
    await this.erase(slot, keep);
    return keep;
  }

  /** Erases the slot's tokens from `keep` on, saving them to disk first when that loses many unsaved tokens. */
  private async erase(slot: Slot, keep: number): Promise<void> {
    const { sequence } = slot;
    const held = sequence.nextTokenIndex;
    if (keep >= held) return;
    const disk = this.options.disk;
    if (disk?.worthSavingBeforeErase(sequence, keep)) await disk.save(sequence);
    slot.pendingSave = false;
    await sequence.eraseContextTokenRanges([{ start: keep, end: held }]);
  }

  private reportDivergence(sequence: LlamaContextSequence, prompt: Token[], position: number): void {
    if (!this.options.onDivergence || position >= prompt.length) return;
    const cached = sequence.contextTokens;
    const excerpt = (tokens: Token[]) => this.options.detokenize(tokens.slice(Math.max(0, position - 4), position + 8));
    this.options.onDivergence({
      position,
      promptTokens: prompt.length,
      cachedTokens: cached.length,
      cachedExcerpt: excerpt(cached),
      promptExcerpt: excerpt(prompt),
    });
  }

  private release(slot: Slot): void {
    slot.busy = slot.lending > 0;
    slot.abandoned = false;
    slot.target = undefined;
    slot.lastUsed = ++this.clock;
    slot.pendingSave ||= this.options.disk?.worthSaving(slot.sequence) ?? false;
    if (!slot.busy) this.freed(slot);
  }

  /** Wakes the waiters, then saves the slot if pending: after the woken request took its slot (a save holds the context). */
  private freed(slot: Slot): void {
    this.wakeAll();
    if (slot.pendingSave) setImmediate(() => { this.flushing = this.flushing.then(() => this.saveIdle(false)); });
  }

  /** Every waiter looks again (few wait: the engine admits at most one request per sequence). */
  private wakeAll(): void {
    for (const wake of this.waiting.splice(0)) wake();
  }

  /** Saves pending sequences one by one while nothing else runs (or all of them when `force`). */
  private async saveIdle(force: boolean): Promise<void> {
    for (const slot of this.slots) {
      if (!slot.pendingSave || slot.busy) continue;
      if (!force && (this.busy > 0 || this.waiting.length > 0)) return;
      slot.busy = true;
      slot.saving = true;
      slot.pendingSave = false;
      try {
        if (this.options.disk?.worthSaving(slot.sequence)) await this.options.disk.save(slot.sequence);
      } finally {
        slot.busy = false;
        slot.saving = false;
        this.wakeAll();
      }
    }
  }
}
