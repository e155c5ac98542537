/**
 * Copies the first tokens of one sequence's cache into another of the same context, through node-llama-cpp's own
 * (internal) copy: llama.cpp's `llama_memory_seq_cp` plus node-llama-cpp's token bookkeeping, then an erase of what
 * lies past the prefix. node-llama-cpp gives each sequence a KV stream of its own, so llama.cpp copies the source's
 * whole stream, and does so at the context's next decode: until a decode has run, the target's cells are described
 * but not yet written, and reading or loading its state (a save, a state file) would see them unwritten. A caller
 * therefore decodes on the target before anything else can touch either sequence's state.
 */
import type { LlamaContextSequence } from "node-llama-cpp";

interface CopyingSequence {
  _copyStateFromOtherSequence(from: LlamaContextSequence, upToTokenIndex: number): Promise<boolean>;
}

/**
 * Makes `into` hold `from`'s first `tokens` tokens (its own tokens are lost). false: node-llama-cpp found the
 * source's bookkeeping and cache out of step (a step of the source was finishing), and `into` is left empty.
 */
export async function copyPrefix(into: LlamaContextSequence, from: LlamaContextSequence, tokens: number): Promise<boolean> {
  const copied = await (into as unknown as CopyingSequence)._copyStateFromOtherSequence(from, tokens);
  if (copied && into.nextTokenIndex === tokens) return true;
  await into.clearHistory();
  return false;
}
