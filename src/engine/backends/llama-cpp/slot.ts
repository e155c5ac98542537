/** One sequence of a context as the slot pool (slot-pool.ts) keeps track of it. */
import type { LlamaContextSequence, Token } from "node-llama-cpp";

export interface Slot {
  sequence: LlamaContextSequence;
  busy: boolean;
  lastUsed: number;
  /** The prompt its current request evaluates (what the slot will hold a prefix of). */
  target?: readonly Token[];
  /** Its request was aborted: the slot frees soon, holding what was evaluated. */
  abandoned: boolean;
  /** Holds enough tokens not on disk to be saved once the context is idle. */
  pendingSave: boolean;
  /** Busy only while its state is written to disk: it frees with its tokens intact. */
  saving: boolean;
  /** Copies of its prefix under way (copy-prefix.ts): it stays busy until they are done, whoever released it. */
  lending: number;
  /** The prompt length of its latest request: what it holds beyond is that request's output. */
  promptEnd: number;
}

/** A busy slot whose request has evaluated its whole prompt: only decodes touch its cache now. */
export function generating(slot: Slot): boolean {
  return slot.target !== undefined && !slot.saving && slot.sequence.nextTokenIndex >= slot.target.length;
}

/** Tokens of the prompt's start the sequence holds. */
export function sharedPrefix(sequence: LlamaContextSequence, prompt: Token[]): number {
  if (sequence.nextTokenIndex === 0) return 0;
  return sequence.compareContextTokens(prompt).firstDifferentIndex;
}
