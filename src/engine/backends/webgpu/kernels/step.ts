/** The per-step uniform: the only values that change between tokens, written once per submit. */

/** WGSL declaration of the step uniform, bound by the kernels that need it. */
export const stepWgsl = /* wgsl */ `
struct Step {
  pos: u32,     // position of the token being decoded (its RoPE angle and KV slot)
  kv_len: u32,  // positions the attention reads: pos + 1
  pad0: u32,
  pad1: u32,
}`;

/** Bytes of the step uniform. */
export const STEP_BYTES = 16;

/** The step uniform's bytes for position `pos`. */
export function encodeStep(pos: number): Uint32Array<ArrayBuffer> {
  return new Uint32Array([pos, pos + 1, 0, 0]);
}
