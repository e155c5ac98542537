/**
 * The sequences of one llama.cpp context, handed out with prefix affinity: a request takes the free sequence whose
 * cached tokens share the longest prefix with its prompt, so an agent that resends a growing conversation only pays
 * for the new suffix. Without a real shared prefix it takes the free sequence whose cache it would erase least (so an
 * agent's side request does not evict the main conversation). Remaining ties go to a slot next to busy ones, then to the least recently used: llama.cpp decodes
 * consecutive sequence ids in one pass over the weights and each gap between busy ids costs another pass (see
 * batch-order.ts); the pool takes a fresh context's sequences in order, so slot index and sequence id agree.
 */
import type { LlamaContextSequence, Token } from "node-llama-cpp";

/** Where a prompt left the best cached prefix; for the prefix-cache debug log. */
export interface PrefixDivergence {
  /** Token position of the first difference (equals the reused prefix length before the last-token rule). */
  position: number;
  promptTokens: number;
  /** Tokens the chosen sequence held. */
  cachedTokens: number;
  /** A little text around the divergence: what the cache held and what the prompt has there. */
  cachedExcerpt: string;
  promptExcerpt: string;
}

export interface SlotPoolOptions {
  /** false: every request starts from an empty sequence (for measuring what the cache saves). */
  prefixCache: boolean;
  /** Turns tokens into text for the divergence excerpts. */
  detokenize(tokens: Token[]): string;
  /** Called when a prompt does not fully extend the chosen sequence's cached tokens. */
  onDivergence?(info: PrefixDivergence): void;
}

/** A sequence on loan, already trimmed: evaluate `prompt.slice(reusedTokens)` on it next. */
export interface SlotLease {
  sequence: LlamaContextSequence;
  /** Prompt tokens kept from the cache (at most promptTokens − 1: the last one is always re-evaluated for logits). */
  reusedTokens: number;
  release(): void;
}

interface Slot { sequence: LlamaContextSequence; busy: boolean; lastUsed: number }

/** Shared prefix tokens that make a cached sequence worth choosing; below it, the slot that loses least is taken. */
const MIN_REUSE = 64;

export class SlotPool {
  private readonly slots: Slot[];
  private readonly waiting: Array<() => void> = [];
  private clock = 0;

  constructor(sequences: LlamaContextSequence[], private readonly options: SlotPoolOptions) {
    this.slots = sequences.map((sequence) => ({ sequence, busy: false, lastUsed: 0 }));
  }

  get size(): number { return this.slots.length; }
  get busy(): number { return this.slots.filter((slot) => slot.busy).length; }

  /** Takes the best free sequence for `prompt` (waiting when all are busy) and erases its diverging tail. */
  async acquire(prompt: Token[]): Promise<SlotLease> {
    let slot = this.pickSlot(prompt);
    while (!slot) {
      await new Promise<void>((resolve) => this.waiting.push(resolve));
      slot = this.pickSlot(prompt);
    }
    slot.busy = true;
    slot.lastUsed = ++this.clock;
    try {
      const reusedTokens = await this.trimToPrompt(slot.sequence, prompt);
      return { sequence: slot.sequence, reusedTokens, release: () => this.release(slot) };
    } catch (error) {
      this.release(slot);
      throw error;
    }
  }

  private pickSlot(prompt: Token[]): Slot | undefined {
    let best: { slot: Slot; shared: number; lost: number; busyNeighbours: number } | undefined;
    for (const [index, slot] of this.slots.entries()) {
      if (slot.busy) continue;
      const common = this.options.prefixCache ? sharedPrefix(slot.sequence, prompt) : 0;
      // A few shared tokens (a chat template's opening) are no reason to erase another conversation's long prefix.
      const shared = common >= MIN_REUSE ? common : 0;
      const lost = this.options.prefixCache ? slot.sequence.nextTokenIndex - common : 0;
      const busyNeighbours = Number(this.slots[index - 1]?.busy ?? false) + Number(this.slots[index + 1]?.busy ?? false);
      const better = !best || shared > best.shared || (shared === best.shared && (lost < best.lost
        || (lost === best.lost && (busyNeighbours > best.busyNeighbours
        || (busyNeighbours === best.busyNeighbours && slot.lastUsed < best.slot.lastUsed)))));
      if (better) best = { slot, shared, lost, busyNeighbours };
    }
    return best?.slot;
  }

  /** Keeps the shared prefix (minus the last prompt token, whose logits we need) and erases the rest. */
  private async trimToPrompt(sequence: LlamaContextSequence, prompt: Token[]): Promise<number> {
    if (!this.options.prefixCache) {
      await sequence.clearHistory();
      return 0;
    }
    const shared = sharedPrefix(sequence, prompt);
    const held = sequence.nextTokenIndex;
    if (shared < held) this.reportDivergence(sequence, prompt, shared);
    const keep = Math.min(shared, prompt.length - 1);
    if (keep < held) await sequence.eraseContextTokenRanges([{ start: keep, end: held }]);
    return keep;
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
    slot.busy = false;
    slot.lastUsed = ++this.clock;
    this.waiting.shift()?.();
  }
}

function sharedPrefix(sequence: LlamaContextSequence, prompt: Token[]): number {
  if (sequence.nextTokenIndex === 0) return 0;
  return sequence.compareContextTokens(prompt).firstDifferentIndex;
}
