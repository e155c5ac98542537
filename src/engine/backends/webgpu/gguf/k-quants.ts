/**
 * Dequantizers for the K-quant blocks that llama-family files mix in (Q4_K_M uses Q4_K and Q6_K, Q5_K_M Q5_K),
 * following ggml's `dequantize_row_q4_K` / `_q5_K` / `_q6_K` step by step in float32. Blocks hold 256 weights.
 */
import { fromHalfBits } from "./half.js";

const f = Math.fround;

/**
 * Q4_K (144 bytes): d, dmin (f16); 12 bytes of eight 6-bit scales and mins; 128 bytes of nibbles, where each 32-byte
 * chunk c holds sub-block 2c in its low nibbles and 2c+1 in its high ones. value = d·scale·q − dmin·min.
 */
export function decodeQ4KBlock(view: DataView, at: number, out: Float32Array, to: number): void {
  const d = fromHalfBits(view.getUint16(at, true));
  const dmin = fromHalfBits(view.getUint16(at + 2, true));
  const scales = at + 4;
  let qs = at + 16;
  for (let chunk = 0; chunk < 4; chunk++) {
    const [sc1, m1] = scaleMin(view, scales, 2 * chunk);
    const [sc2, m2] = scaleMin(view, scales, 2 * chunk + 1);
    const d1 = f(d * sc1), min1 = f(dmin * m1), d2 = f(d * sc2), min2 = f(dmin * m2);
    for (let l = 0; l < 32; l++) {
      const byte = view.getUint8(qs + l);
      out[to + 64 * chunk + l] = f(f(d1 * (byte & 15)) - min1);
      out[to + 64 * chunk + 32 + l] = f(f(d2 * (byte >> 4)) - min2);
    }
    qs += 32;
  }
}

/**
 * Q5_K (176 bytes): d, dmin (f16); 12 scale bytes as Q4_K; qh[32], where bit c of byte l is the 5th bit of weight
 * 32c + l; qs[128] as Q4_K. value = d·scale·q − dmin·min.
 */
export function decodeQ5KBlock(view: DataView, at: number, out: Float32Array, to: number): void {
  const d = fromHalfBits(view.getUint16(at, true));
  const dmin = fromHalfBits(view.getUint16(at + 2, true));
  const qh = at + 16;
  for (let chunk = 0; chunk < 4; chunk++) {
    const [sc1, m1] = scaleMin(view, at + 4, 2 * chunk);
    const [sc2, m2] = scaleMin(view, at + 4, 2 * chunk + 1);
    const d1 = f(d * sc1), min1 = f(dmin * m1), d2 = f(d * sc2), min2 = f(dmin * m2);
    for (let l = 0; l < 32; l++) {
      const byte = view.getUint8(at + 48 + 32 * chunk + l);
      const high = view.getUint8(qh + l);
      out[to + 64 * chunk + l] = f(f(d1 * ((byte & 15) + ((high >> (2 * chunk)) & 1 ? 16 : 0))) - min1);
      out[to + 64 * chunk + 32 + l] = f(f(d2 * ((byte >> 4) + ((high >> (2 * chunk + 1)) & 1 ? 16 : 0))) - min2);
    }
  }
}

/** The 6-bit scale and min of sub-block j (ggml's get_scale_min_k4): 0–3 sit plain, 4–7 are split. */
export function scaleMin(view: DataView, scales: number, j: number): [number, number] {
  const byte = (k: number) => view.getUint8(scales + k);
  if (j < 4) return [byte(j) & 63, byte(j + 4) & 63];
  return [(byte(j + 4) & 15) | ((byte(j - 4) >> 6) << 4), (byte(j + 4) >> 4) | ((byte(j) >> 6) << 4)];
}

/**
 * Q6_K (210 bytes): ql[128] low 4 bits, qh[64] high 2 bits, scales[16] int8 (one per 16 weights), d (f16).
 * value = d·scale·(q − 32).
 */
export function decodeQ6KBlock(view: DataView, at: number, out: Float32Array, to: number): void {
  const d = fromHalfBits(view.getUint16(at + 208, true));
  for (let half = 0; half < 2; half++) {
    const ql = at + 64 * half;
    const qh = at + 128 + 32 * half;
    const sc = at + 192 + 8 * half;
    const base = to + 128 * half;
    for (let l = 0; l < 32; l++) {
      const is = l >> 4;
      const low = view.getUint8(ql + l);
      const low2 = view.getUint8(ql + l + 32);
      const high = view.getUint8(qh + l);
      const quants = [(low & 15) | ((high & 3) << 4), (low2 & 15) | (((high >> 2) & 3) << 4), (low >> 4) | (((high >> 4) & 3) << 4), (low2 >> 4) | (((high >> 6) & 3) << 4)];
      quants.forEach((q, k) => (out[base + 32 * k + l] = f(f(d * view.getInt8(sc + is + 2 * k)) * (q - 32))));
    }
  }
}
