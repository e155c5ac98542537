/**
 * Stops a decode step whose every token belongs to an abandoned request. A prompt evaluated alone is decoded in full
 * 512-token batches (smaller ones cost prompt speed), and such a batch deep in a long prompt takes seconds on a small
 * CPU; without this a client that hangs up would keep the machine busy until the batch ends. The step is stopped
 * through llama.cpp's abort callback (native/threadpool.c): llama.cpp drops the interrupted batch's cells and keeps
 * everything evaluated before it, so a retry still finds those tokens cached. A step that carries any other
 * sequence's tokens is never interrupted.
 */
import type { LlamaContext, LlamaContextSequence } from "node-llama-cpp";
import { shadowMethod, whenSettled } from "./native-module.js";

/** The native context methods watched (internal to node-llama-cpp, present in the pinned 3.x release). */
interface NativeBatch {
  initBatch(size: number): void;
  addToBatch(sequenceId: number, firstTokenIndex: number, tokens: Uint32Array, logitIndexes: Uint32Array): Uint32Array;
  decodeBatch(): Promise<void>;
}

export class StepInterrupter {
  private readonly abandoned = new Set<number>();
  /** Sequences with tokens in the batch being built or decoded. */
  private readonly batch = new Set<number>();
  private decoding = false;

  private constructor(private readonly setInterrupt: (on: boolean) => void) {}

  /** Watches `context`'s batches; undefined when the installed node-llama-cpp lacks the methods watched. */
  static attach(context: LlamaContext, setInterrupt: (on: boolean) => void): StepInterrupter | undefined {
    const native = (context as unknown as { _ctx?: Partial<NativeBatch> })._ctx;
    const { initBatch, addToBatch, decodeBatch } = native ?? {};
    if (!native || typeof initBatch !== "function" || typeof addToBatch !== "function" || typeof decodeBatch !== "function") return undefined;
    const steps = new StepInterrupter(setInterrupt);
    shadowMethod(native, "initBatch", (size) => {
      steps.batch.clear();
      initBatch.call(native, size);
    });
    shadowMethod(native, "addToBatch", (sequenceId, firstTokenIndex, tokens, logitIndexes) => {
      steps.batch.add(sequenceId);
      return addToBatch.call(native, sequenceId, firstTokenIndex, tokens, logitIndexes);
    });
    shadowMethod(native, "decodeBatch", () => {
      steps.decoding = true;
      if (steps.onlyAbandoned()) steps.setInterrupt(true);
      return whenSettled(decodeBatch.call(native), () => {
        steps.decoding = false;
        steps.setInterrupt(false);
      });
    });
    return steps;
  }

  /** `sequence`'s request is gone: its step in flight stops if no other sequence shares it. */
  abandon(sequence: LlamaContextSequence): void {
    const id = sequenceIdOf(sequence);
    if (id === undefined) return;
    this.abandoned.add(id);
    if (this.decoding && this.onlyAbandoned()) this.setInterrupt(true);
  }

  /** `sequence` serves a live request again. */
  forget(sequence: LlamaContextSequence): void {
    const id = sequenceIdOf(sequence);
    if (id !== undefined) this.abandoned.delete(id);
  }

  private onlyAbandoned(): boolean {
    if (this.batch.size === 0) return false;
    for (const id of this.batch) if (!this.abandoned.has(id)) return false;
    return true;
  }
}

/** node-llama-cpp's id of `sequence` (internal field of the pinned 3.x release), which is also its KV stream. */
export function sequenceIdOf(sequence: LlamaContextSequence): number | undefined {
  const id = (sequence as unknown as { _sequenceId?: unknown })._sequenceId;
  return typeof id === "number" ? id : undefined;
}
