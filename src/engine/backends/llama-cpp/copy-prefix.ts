/**
 * Copies the first tokens of one sequence's cache into another of the same context, through node-llama-cpp's own
 * (internal) copy: its token bookkeeping and lock around llama.cpp's copy, then an erase of what lies past the prefix.
 *
 * Two ways, which the step planner chooses between (`prefixCopy`):
 * - "stream": llama.cpp's `llama_memory_seq_cp`. node-llama-cpp gives each sequence a KV stream of its own, so
 *   llama.cpp copies the source's whole stream, and does so at the context's next decode: until a decode has run,
 *   the target's cells are described but not yet written, and reading or loading its state (a save, a state file)
 *   would see them unwritten, as would the copy if the source changed first. A caller therefore decodes on the
 *   target before anything else can touch either sequence's state.
 * - "cells": where `useCellCopies` installed kiln's native copier (a model on the CPU), only the source's cells move,
 *   through llama.cpp's sequence state API, and are in place when the copy returns (native/copy-cells.c).
 */
import type { LlamaContext, LlamaContextSequence, LlamaModel } from "node-llama-cpp";
import { nativeTarget, shadowMethod } from "./native-module.js";

export type PrefixCopyWay = "cells" | "stream";

/** node-llama-cpp's sequence, with the internals used here. */
interface CopyingSequence {
  _sequenceId: number;
  _copyStateFromOtherSequence(from: LlamaContextSequence, upToTokenIndex: number): Promise<boolean>;
}

type NativeCopy = (target: number, source: number) => Promise<number>;

/** Per context with cell copies: the target sequences whose copy under way goes by cells. */
const cellTargets = new WeakMap<LlamaContext, Set<number>>();

/**
 * Lets `copyPrefix` copy by cells on this context: kiln's native copier takes the place of node-llama-cpp's native
 * copy for the targets that ask for it. Only for a model whose whole cache is plain attention on the CPU (a model with
 * sliding-window or recurrent layers needs node-llama-cpp's checkpoints, which its copy clones); false where not
 * possible here.
 */
export function useCellCopies(context: LlamaContext, model: LlamaModel): boolean {
  const insights = model.fileInsights;
  if (insights.isHybrid || insights.isRecurrent || insights.swaSize != null) return false;
  const target = nativeTarget(context, model);
  if (!target) return false;
  const { native, handles } = target;
  const copier = native.cellCopier(handles.context, handles.model, target.cells, target.sequences, target.libraries.libllama);
  const nativeContext = handles.context as typeof handles.context & { copySequenceStateFromOtherSequence: NativeCopy };
  const streamCopy = nativeContext.copySequenceStateFromOtherSequence;
  if (!copier || typeof streamCopy !== "function") return false;
  const targets = new Set<number>();
  const copy: NativeCopy = (target, source) => targets.has(target)
    ? Promise.resolve(native.copyCells(copier, target, source))
    : streamCopy.call(nativeContext, target, source);
  shadowMethod(nativeContext, "copySequenceStateFromOtherSequence", copy);
  cellTargets.set(context, targets);
  return true;
}

/**
 * Makes `into` hold `from`'s first `tokens` tokens (its own tokens are lost); returns the way it was copied (cells
 * only where asked for and installed). undefined: node-llama-cpp found the source's bookkeeping and cache out of step
 * (a step of the source was finishing), or the copy failed, and `into` is left empty.
 */
export async function copyPrefix(into: LlamaContextSequence, from: LlamaContextSequence, tokens: number, way: PrefixCopyWay = "stream"): Promise<PrefixCopyWay | undefined> {
  const target = into as unknown as CopyingSequence;
  const targets = way === "cells" ? cellTargets.get(into.context) : undefined;
  targets?.add(target._sequenceId);
  try {
    const copied = await target._copyStateFromOtherSequence(from, tokens);
    if (copied && into.nextTokenIndex === tokens) return targets ? "cells" : "stream";
  } finally {
    targets?.delete(target._sequenceId);
  }
  await into.clearHistory();
  return undefined;
}
