/** Shared pieces of the RoPE and attention tests: a tiny GQA shape and its step uniform. */
import { fromHalfBits, toHalfBits } from "../gguf/half.js";
import { device } from "./gpu-test-kit.fixture.js";
import type { AttentionShape } from "./rope.js";
import { createUniform } from "./run-kernel.js";
import { STEP_BYTES, encodeStep } from "./step.js";

/** 4 query heads over 2 kv heads (GQA group 2), head dim 16, 8 positions. */
export const SHAPE: AttentionShape = { heads: 4, kvHeads: 2, headDim: 16, maxCtx: 8 };

/** A step uniform set to position `pos` (and `tokens` batch tokens from there), on the kit's device unless `on`. */
export function stepAt(pos: number, tokens = 1, on = device()): GPUBuffer {
  const step = createUniform(on, STEP_BYTES);
  on.queue.writeBuffer(step, 0, encodeStep(pos, tokens));
  return step;
}

/** Values as an f16 KV cache stores them: two halves per u32, the even index low. */
export function packHalves(values: Float32Array): Uint32Array {
  return Uint32Array.from({ length: values.length / 2 }, (_, k) => (toHalfBits(values[2 * k]!) | (toHalfBits(values[2 * k + 1]!) << 16)) >>> 0);
}

/** The inverse of packHalves. */
export function unpackHalves(words: Uint32Array): Float32Array {
  return Float32Array.from({ length: words.length * 2 }, (_, i) => fromHalfBits((words[i >> 1]! >>> ((i & 1) * 16)) & 0xffff));
}
