/**
 * K-quants in "kiln-planar v1": each 256-weight block becomes eight 32-weight blocks in the planes of its legacy
 * twin, so the kernels' 32-block loop reads them unchanged. Q4_K takes Q4_1's nibble layout, Q5_K Q5_1's (with
 * `high`), Q6_K Q8_0's (unsigned 6-bit q, one byte each). Each 32-block's meta is two f32 (not an f16 pair):
 * (d·scale, −dmin·min) for Q4_K/Q5_K and the two 16-weight scales d·scale for Q6_K, products ggml also forms in f32.
 */
import { fromHalfBits } from "./half.js";
import { scaleMin } from "./k-quants.js";
import { GgmlType } from "./quant-types.js";

const f = Math.fround;

/** The planes of a K-quant tensor (see PlanarTensor). */
export interface KPlanes {
  quants: Uint32Array;
  meta: Uint32Array;
  high: Uint32Array;
}

/** Splits `blocks` K-quant blocks of `type` into planes. */
export function repackKQuant(type: GgmlType.Q4_K | GgmlType.Q5_K | GgmlType.Q6_K, bytes: Uint8Array, blocks: number): KPlanes {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const sub = blocks * 8;
  const planes: KPlanes = { quants: new Uint32Array(sub * (type === GgmlType.Q6_K ? 8 : 4)), meta: new Uint32Array(sub * 2), high: new Uint32Array(type === GgmlType.Q5_K ? sub : 0) };
  const meta = new Float32Array(planes.meta.buffer);
  const quantBytes = new Uint8Array(planes.quants.buffer);
  const q = new Uint8Array(256);
  for (let b = 0; b < blocks; b++) {
    if (type === GgmlType.Q6_K) unpackQ6K(view, b * 210, q, meta, b * 16);
    else unpackAffineK(type, view, b * (type === GgmlType.Q4_K ? 144 : 176), q, meta, b * 16);
    for (let s = 0; s < 8; s++) {
      const i = b * 8 + s;
      if (type === GgmlType.Q6_K) {
        quantBytes.set(q.subarray(32 * s, 32 * s + 32), i * 32);
        continue;
      }
      // Q4_1's order: byte j holds weight j (low nibble) and weight j + 16 (high nibble).
      for (let j = 0; j < 16; j++) quantBytes[i * 16 + j] = (q[32 * s + j]! & 15) | ((q[32 * s + j + 16]! & 15) << 4);
      if (type === GgmlType.Q5_K) {
        let qh = 0;
        for (let j = 0; j < 32; j++) qh |= (q[32 * s + j]! >> 4) << j;
        planes.high[i] = qh >>> 0;
      }
    }
  }
  return planes;
}

/** Q4_K/Q5_K: the 256 quants in weight order, and (d·scale, −dmin·min) per 32 weights into meta[at..at+16]. */
function unpackAffineK(type: GgmlType, view: DataView, at: number, q: Uint8Array, meta: Float32Array, to: number): void {
  const d = fromHalfBits(view.getUint16(at, true));
  const dmin = fromHalfBits(view.getUint16(at + 2, true));
  const qs = at + (type === GgmlType.Q5_K ? 48 : 16);
  for (let s = 0; s < 8; s++) {
    const [sc, m] = scaleMin(view, at + 4, s);
    meta[to + 2 * s] = f(d * sc);
    meta[to + 2 * s + 1] = -f(dmin * m);
    const chunk = s >> 1;
    for (let l = 0; l < 32; l++) {
      const byte = view.getUint8(qs + 32 * chunk + l);
      const high = type === GgmlType.Q5_K ? ((view.getUint8(at + 16 + l) >> s) & 1) << 4 : 0;
      q[32 * s + l] = (s & 1 ? byte >> 4 : byte & 15) | high;
    }
  }
}

/** Q6_K: the 256 unsigned 6-bit quants in weight order, and d·scale per 16 weights into meta[at..at+16]. */
function unpackQ6K(view: DataView, at: number, q: Uint8Array, meta: Float32Array, to: number): void {
  const d = fromHalfBits(view.getUint16(at + 208, true));
  for (let s = 0; s < 16; s++) meta[to + s] = f(d * view.getInt8(at + 192 + s));
  for (let w = 0; w < 256; w++) {
    const half = w >> 7;
    const k = (w & 127) >> 5;
    const l = w & 31;
    const low = view.getUint8(at + 64 * half + l + 32 * (k & 1));
    const high = view.getUint8(at + 128 + 32 * half + l);
    q[w] = (k < 2 ? low & 15 : low >> 4) | (((high >> (2 * k)) & 3) << 4);
  }
}
