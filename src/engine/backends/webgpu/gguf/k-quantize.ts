/**
 * Simple K-quant encoders, so test fixtures and benchmark files can be written in Q4_K, Q5_K and Q6_K. They are
 * round-to-nearest (ggml's quantizers also search scales iteratively, so the bytes differ from llama.cpp's), but the
 * blocks are valid, and `decodeQ*KBlock` reads them back as llama.cpp would.
 */
import { roundToHalf, toHalfBits } from "./half.js";

const f = Math.fround;

/** Q4_K (bits 4) or Q5_K (bits 5): per 32 weights a 6-bit scale and min against the block's f16 d and dmin. */
export function encodeAffineKBlock(bits: 4 | 5, x: Float32Array, from: number, view: DataView, at: number): void {
  const top = (1 << bits) - 1;
  const scales: number[] = [];
  const mins: number[] = [];
  for (let j = 0; j < 8; j++) {
    const sub = x.subarray(from + 32 * j, from + 32 * j + 32);
    const min = Math.min(0, ...sub);
    scales.push((Math.max(...sub) - min) / top);
    mins.push(-min);
  }
  const d = roundToHalf(Math.max(...scales) / 63);
  const dmin = roundToHalf(Math.max(...mins) / 63);
  const sc = scales.map((s) => (d ? Math.min(63, Math.round(s / d)) : 0));
  const m = mins.map((v) => (dmin ? Math.min(63, Math.round(v / dmin)) : 0));
  view.setUint16(at, toHalfBits(d), true);
  view.setUint16(at + 2, toHalfBits(dmin), true);
  for (let j = 0; j < 4; j++) {
    view.setUint8(at + 4 + j, (sc[j]! & 63) | ((sc[j + 4]! >> 4) << 6));
    view.setUint8(at + 8 + j, (m[j]! & 63) | ((m[j + 4]! >> 4) << 6));
    view.setUint8(at + 12 + j, (sc[j + 4]! & 15) | ((m[j + 4]! & 15) << 4));
  }
  const qs = at + (bits === 4 ? 16 : 48);
  for (let w = 0; w < 256; w++) {
    const j = w >> 5;
    const step = f(d * sc[j]!);
    const q = step ? Math.max(0, Math.min(top, Math.round((x[from + w]! + f(dmin * m[j]!)) / step))) : 0;
    const chunk = w >> 6;
    const l = w & 31;
    const upper = (w & 32) !== 0;
    view.setUint8(qs + 32 * chunk + l, view.getUint8(qs + 32 * chunk + l) | ((q & 15) << (upper ? 4 : 0)));
    if (bits === 5) view.setUint8(at + 16 + l, view.getUint8(at + 16 + l) | ((q >> 4) << (2 * chunk + (upper ? 1 : 0))));
  }
}

/** Q6_K: per 16 weights an int8 scale against the block's f16 d; quants −32..31 stored as 6 bits split 4 + 2. */
export function encodeQ6KBlock(x: Float32Array, from: number, view: DataView, at: number): void {
  const scales = Array.from({ length: 16 }, (_, s) => Math.max(...Array.from(x.subarray(from + 16 * s, from + 16 * s + 16), Math.abs)) / 31);
  const d = roundToHalf(Math.max(...scales) / 127);
  const sc = scales.map((s) => (d ? Math.min(127, Math.round(s / d)) : 0));
  for (let w = 0; w < 256; w++) {
    const half = w >> 7;
    const k = (w & 127) >> 5;
    const l = w & 31;
    const index = 8 * half + (l >> 4) + 2 * k; // = w >> 4: scale s covers weights 16s..16s+15
    const step = f(d * sc[index]!);
    const q = (step ? Math.max(-32, Math.min(31, Math.round(x[from + w]! / step))) : 0) + 32;
    const ql = at + 64 * half + l + 32 * (k & 1);
    view.setUint8(ql, view.getUint8(ql) | (k < 2 ? q & 15 : (q & 15) << 4));
    view.setUint8(at + 128 + 32 * half + l, view.getUint8(at + 128 + 32 * half + l) | ((q >> 4) << (2 * k)));
  }
  sc.forEach((s, i) => view.setInt8(at + 192 + i, s));
  view.setUint16(at + 208, toHalfBits(d), true);
}
