/** The per-step uniform: the only values that change between tokens, written once per submit. */

/** WGSL declaration of the step uniform, bound by the kernels that need it. */
export const stepWgsl = /* wgsl */ `
struct Step {
  pos: u32,     // position of the token being decoded (its RoPE angle and KV slot)
  kv_len: u32,  // positions the attention reads: pos + 1
  tokens: u32,  // tokens in a prefill batch (at pos, pos + 1, …); 1 when decoding
  first: u32,   // first token of a windowed GEMM's tile in the batch (see gemm.ts)
}`;

/** Bytes of the step uniform. */
export const STEP_BYTES = 16;

/** The step uniform's bytes for `tokens` tokens from position `pos` on (one when decoding); `first`: a tile's first token. */
export function encodeStep(pos: number, tokens = 1, first = 0): Uint32Array<ArrayBuffer> {
  return new Uint32Array([pos, pos + tokens, tokens, first]);
}
