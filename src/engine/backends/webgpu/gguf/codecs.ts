/**
 * JS codecs for the legacy ggml block types. `quantize` follows ggml's reference quantizers
 * (`quantize_row_*_ref` in ggml-quants.c) step by step in float32, so files we write hold the bytes llama.cpp
 * would write; `dequantize` follows `dequantize_row_*`. K-quants are encoded by the simpler k-quantize.ts.
 */
import { fromHalfBits, toHalfBits } from "./half.js";
import { decodeQ4KBlock, decodeQ5KBlock, decodeQ6KBlock } from "./k-quants.js";
import { encodeAffineKBlock, encodeQ6KBlock } from "./k-quantize.js";
import { GgmlType, blockInfo, byteSize, typeName } from "./quant-types.js";

const QK = 32;
const HALF = QK / 2;
const f = Math.fround;

type BlockDecoder = (view: DataView, at: number, out: Float32Array, to: number) => void;
type BlockEncoder = (x: Float32Array, from: number, view: DataView, at: number) => void;

/** Decodes `count` weights of `type` from the start of `bytes` into float32. */
export function dequantize(type: GgmlType, bytes: Uint8Array, count: number): Float32Array {
  const size = byteSize(type, count);
  if (bytes.byteLength < size) throw new RangeError(`${typeName(type)}: ${count} weights need ${size} bytes, got ${bytes.byteLength}`);
  const view = new DataView(bytes.buffer, bytes.byteOffset, size);
  const out = new Float32Array(count);
  if (type === GgmlType.F32) for (let i = 0; i < count; i++) out[i] = view.getFloat32(4 * i, true);
  else if (type === GgmlType.F16) for (let i = 0; i < count; i++) out[i] = fromHalfBits(view.getUint16(2 * i, true));
  else {
    const decode = decoderOf(type);
    const { bytes: blockBytes, weights } = blockInfo(type);
    for (let b = 0; b < count / weights; b++) decode(view, b * blockBytes, out, b * weights);
  }
  return out;
}

/** Encodes float32 values as `type`; the length must be a whole number of blocks. */
export function quantize(type: GgmlType, values: Float32Array): Uint8Array {
  const out = new Uint8Array(byteSize(type, values.length));
  const view = new DataView(out.buffer);
  if (type === GgmlType.F32) values.forEach((v, i) => view.setFloat32(4 * i, v, true));
  else if (type === GgmlType.F16) values.forEach((v, i) => view.setUint16(2 * i, toHalfBits(v), true));
  else {
    const encode = encoderOf(type);
    const { bytes: blockBytes, weights } = blockInfo(type);
    for (let b = 0; b < values.length / weights; b++) encode(values, b * weights, view, b * blockBytes);
  }
  return out;
}

function decoderOf(type: GgmlType): BlockDecoder {
  const decoder = DECODERS[type];
  if (!decoder) throw new RangeError(`no JS codec for ${typeName(type)}`);
  return decoder;
}

function encoderOf(type: GgmlType): BlockEncoder {
  const encoder = ENCODERS[type];
  if (!encoder) throw new RangeError(`no JS codec for ${typeName(type)}`);
  return encoder;
}

const half = (view: DataView, at: number) => fromHalfBits(view.getUint16(at, true));

/** Writes 32 quants as ggml packs them: byte j holds weight j (low nibble) and weight j+16 (high nibble). */
function packNibbles(q: Uint8Array, view: DataView, at: number): void {
  for (let j = 0; j < HALF; j++) view.setUint8(at + j, (q[j]! & 15) | ((q[j + HALF]! & 15) << 4));
}

/** The 5th bits of 32 quants as ggml's qh word: bit j belongs to weight j. */
function highBits(q: Uint8Array): number {
  let qh = 0;
  for (let j = 0; j < QK; j++) qh |= ((q[j]! >> 4) & 1) << j;
  return qh >>> 0;
}

/** The value with the largest magnitude (the first one on ties), as ggml's symmetric quantizers pick it. */
function signedMax(x: Float32Array, from: number): number {
  let amax = 0;
  let max = 0;
  for (let j = 0; j < QK; j++) {
    const v = x[from + j]!;
    if (amax < Math.abs(v)) {
      amax = Math.abs(v);
      max = v;
    }
  }
  return max;
}

function range(x: Float32Array, from: number): { min: number; max: number } {
  let min = Infinity;
  let max = -Infinity;
  for (let j = 0; j < QK; j++) {
    const v = x[from + j]!;
    if (v < min) min = v;
    if (v > max) max = v;
  }
  return { min, max };
}

/** Symmetric 4/5-bit: d = max / -2^(bits-1), q = min(top, trunc(x/d + offset + 0.5)). */
function symmetricQuants(x: Float32Array, from: number, bits: number): { d: number; q: Uint8Array } {
  const d = f(signedMax(x, from) / -(1 << (bits - 1)));
  const id = d ? f(1 / d) : 0;
  const offset = f((1 << (bits - 1)) + 0.5);
  const top = (1 << bits) - 1;
  const q = new Uint8Array(QK);
  for (let j = 0; j < QK; j++) q[j] = Math.min(top, Math.trunc(f(f(x[from + j]! * id) + offset)));
  return { d, q };
}

/** Asymmetric 4/5-bit: d = (max − min) / (2^bits − 1), q = trunc((x − min)/d + 0.5). */
function affineQuants(x: Float32Array, from: number, bits: number): { d: number; m: number; q: Uint8Array } {
  const { min, max } = range(x, from);
  const top = (1 << bits) - 1;
  const d = f(f(max - min) / top);
  const id = d ? f(1 / d) : 0;
  const q = new Uint8Array(QK);
  // ggml clamps the 4-bit case only (the 5-bit one stores the truncated byte as it is).
  const limit = bits === 4 ? top : 255;
  for (let j = 0; j < QK; j++) q[j] = Math.min(limit, Math.trunc(f(f(f(x[from + j]! - min) * id) + 0.5)));
  return { d, m: min, q };
}

const ENCODERS: Partial<Record<GgmlType, BlockEncoder>> = {
  [GgmlType.Q4_0]: (x, from, view, at) => {
    const { d, q } = symmetricQuants(x, from, 4);
    view.setUint16(at, toHalfBits(d), true);
    packNibbles(q, view, at + 2);
  },
  [GgmlType.Q4_1]: (x, from, view, at) => {
    const { d, m, q } = affineQuants(x, from, 4);
    view.setUint16(at, toHalfBits(d), true);
    view.setUint16(at + 2, toHalfBits(m), true);
    packNibbles(q, view, at + 4);
  },
  [GgmlType.Q5_0]: (x, from, view, at) => {
    const { d, q } = symmetricQuants(x, from, 5);
    view.setUint16(at, toHalfBits(d), true);
    view.setUint32(at + 2, highBits(q), true);
    packNibbles(q, view, at + 6);
  },
  [GgmlType.Q5_1]: (x, from, view, at) => {
    const { d, m, q } = affineQuants(x, from, 5);
    view.setUint16(at, toHalfBits(d), true);
    view.setUint16(at + 2, toHalfBits(m), true);
    view.setUint32(at + 4, highBits(q), true);
    packNibbles(q, view, at + 8);
  },
  [GgmlType.Q8_0]: (x, from, view, at) => {
    let amax = 0;
    for (let j = 0; j < QK; j++) amax = Math.max(amax, Math.abs(x[from + j]!));
    const d = f(amax / 127);
    const id = d ? f(1 / d) : 0;
    view.setUint16(at, toHalfBits(d), true);
    for (let j = 0; j < QK; j++) view.setInt8(at + 2 + j, roundHalfAway(f(x[from + j]! * id)));
  },
  [GgmlType.Q4_K]: (x, from, view, at) => encodeAffineKBlock(4, x, from, view, at),
  [GgmlType.Q5_K]: (x, from, view, at) => encodeAffineKBlock(5, x, from, view, at),
  [GgmlType.Q6_K]: encodeQ6KBlock,
};

/** C's roundf: halves round away from zero (Math.round rounds them up). */
function roundHalfAway(v: number): number {
  return Math.sign(v) * Math.round(Math.abs(v));
}

/**
 * Decodes 32 nibble/5-bit quants of a block: value = (q + shift)·d, plus m for the affine types (only those add
 * it, so a symmetric block keeps ggml's −0 where (q − 8)·d is −0).
 */
function decodeNibbles(view: DataView, qsAt: number, qh: number, shift: number, d: number, m: number | null, out: Float32Array, to: number): void {
  const value = m === null ? (q: number) => f((q + shift) * d) : (q: number) => f(f(q * d) + m);
  for (let j = 0; j < HALF; j++) {
    const byte = view.getUint8(qsAt + j);
    out[to + j] = value((byte & 15) | (((qh >>> j) & 1) << 4));
    out[to + j + HALF] = value((byte >> 4) | (((qh >>> (j + HALF)) & 1) << 4));
  }
}

const DECODERS: Partial<Record<GgmlType, BlockDecoder>> = {
  [GgmlType.Q4_0]: (view, at, out, to) => decodeNibbles(view, at + 2, 0, -8, half(view, at), null, out, to),
  [GgmlType.Q4_1]: (view, at, out, to) => decodeNibbles(view, at + 4, 0, 0, half(view, at), half(view, at + 2), out, to),
  [GgmlType.Q5_0]: (view, at, out, to) => decodeNibbles(view, at + 6, view.getUint32(at + 2, true), -16, half(view, at), null, out, to),
  [GgmlType.Q5_1]: (view, at, out, to) =>
    decodeNibbles(view, at + 8, view.getUint32(at + 4, true), 0, half(view, at), half(view, at + 2), out, to),
  [GgmlType.Q8_0]: (view, at, out, to) => {
    const d = half(view, at);
    for (let j = 0; j < QK; j++) out[to + j] = f(view.getInt8(at + 2 + j) * d);
  },
  [GgmlType.Q4_K]: decodeQ4KBlock,
  [GgmlType.Q5_K]: decodeQ5KBlock,
  [GgmlType.Q6_K]: decodeQ6KBlock,
};
