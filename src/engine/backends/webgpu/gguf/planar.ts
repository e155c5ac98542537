/**
 * "kiln-planar v1": GGUF blocks split into aligned planes so WGSL reads whole u32 words (GGUF blocks of 18, 22
 * and 34 bytes are not 4-byte aligned). See the WebGPU design note §1.4 for why.
 */
import { fromHalfBits } from "./half.js";
import { repackKQuant } from "./k-planar.js";
import { GgmlType, byteSize, typeName } from "./quant-types.js";

/** A `rows × cols` tensor (cols = ggml ne[0], a multiple of 32) in planes; block i = row * (cols / 32) + b. */
export interface PlanarTensor {
  type: GgmlType;
  rows: number;
  cols: number;
  /**
   * Q4_0/Q4_1/Q5_0/Q5_1: 4 u32 per block, the 16 `qs` bytes as in GGUF (byte j: weight j low nibble, weight
   * j+16 high nibble). Q8_0: 8 u32 per block, the 32 int8 quants. F32: one u32 of bits per weight. F16: two
   * halves per u32, weight 2k in the low half.
   */
  quants: Uint32Array;
  /**
   * One u32 per block: f16 d in the low 16 bits, f16 m in the high 16 (0 for Q4_0, Q5_0, Q8_0). Empty for F32/F16.
   * K-quants (see k-planar.ts): two f32 per block.
   */
  meta: Uint32Array;
  /** Q5_0/Q5_1/Q5_K: one u32 per block, qh (bit j = 5th bit of weight j). Empty otherwise. */
  high: Uint32Array;
}

/** Where each field sits inside a GGUF block, in bytes. */
interface BlockLayout {
  size: number;
  /** Offset and length of the (d[, m]) f16 pair. */
  meta: [number, number];
  qs: [number, number];
  qh?: number;
}

const LAYOUTS: Partial<Record<GgmlType, BlockLayout>> = {
  [GgmlType.Q4_0]: { size: 18, meta: [0, 2], qs: [2, 16] },
  [GgmlType.Q4_1]: { size: 20, meta: [0, 4], qs: [4, 16] },
  [GgmlType.Q5_0]: { size: 22, meta: [0, 2], qs: [6, 16], qh: 2 },
  [GgmlType.Q5_1]: { size: 24, meta: [0, 4], qs: [8, 16], qh: 4 },
  [GgmlType.Q8_0]: { size: 34, meta: [0, 2], qs: [2, 32] },
};

const QK = 32;

/** Splits a GGUF tensor's bytes into the planar layout. `bytes` may be any view (no alignment needed). */
export function repackPlanar(type: GgmlType, bytes: Uint8Array, rows: number, cols: number): PlanarTensor {
  if (cols % QK !== 0) throw new RangeError(`planar tensors need cols to be a multiple of 32, got ${cols}`);
  const count = rows * cols;
  const size = byteSize(type, count);
  if (bytes.byteLength < size) throw new RangeError(`${typeName(type)} ${rows}×${cols} needs ${size} bytes, got ${bytes.byteLength}`);
  if (type === GgmlType.F32 || type === GgmlType.F16) {
    // Copy so the planes are 4-byte aligned and own their memory; the byte order is GGUF's (little-endian).
    const quants = new Uint32Array(size / 4);
    new Uint8Array(quants.buffer).set(bytes.subarray(0, size));
    return { type, rows, cols, quants, meta: new Uint32Array(0), high: new Uint32Array(0) };
  }
  if (type === GgmlType.Q4_K || type === GgmlType.Q5_K || type === GgmlType.Q6_K) return { type, rows, cols, ...repackKQuant(type, bytes, count / 256) };
  const layout = LAYOUTS[type];
  if (!layout) throw new RangeError(`no planar layout for ${typeName(type)}`);
  return splitBlocks(type, layout, bytes, rows, cols);
}

function splitBlocks(type: GgmlType, layout: BlockLayout, bytes: Uint8Array, rows: number, cols: number): PlanarTensor {
  const blocks = (rows * cols) / QK;
  const [qsAt, qsLength] = layout.qs;
  const [metaAt, metaLength] = layout.meta;
  const quants = new Uint32Array((blocks * qsLength) / 4);
  const meta = new Uint32Array(blocks);
  const high = new Uint32Array(layout.qh === undefined ? 0 : blocks);
  const quantBytes = new Uint8Array(quants.buffer);
  const metaBytes = new Uint8Array(meta.buffer);
  const highBytes = new Uint8Array(high.buffer);
  for (let i = 0; i < blocks; i++) {
    const at = i * layout.size;
    quantBytes.set(bytes.subarray(at + qsAt, at + qsAt + qsLength), i * qsLength);
    metaBytes.set(bytes.subarray(at + metaAt, at + metaAt + metaLength), i * 4);
    if (layout.qh !== undefined) highBytes.set(bytes.subarray(at + layout.qh, at + layout.qh + 4), i * 4);
  }
  return { type, rows, cols, quants, meta, high };
}

/**
 * Decodes a planar tensor to float32 straight from its planes, the way a kernel reads them. Tests use it as the
 * independent check of the layout (against `dequantize` on the GGUF bytes).
 */
export function dequantizePlanar(tensor: PlanarTensor): Float32Array {
  const { type, quants, meta, high } = tensor;
  const out = new Float32Array(tensor.rows * tensor.cols);
  if (type === GgmlType.F32) return new Float32Array(quants.buffer.slice(quants.byteOffset, quants.byteOffset + out.length * 4));
  if (type === GgmlType.F16) {
    for (let k = 0; k < out.length / 2; k++) {
      out[2 * k] = fromHalfBits(quants[k]! & 0xffff);
      out[2 * k + 1] = fromHalfBits(quants[k]! >>> 16);
    }
    return out;
  }
  const kMeta = new Float32Array(meta.buffer, meta.byteOffset, meta.length);
  const k = type === GgmlType.Q4_K || type === GgmlType.Q5_K || type === GgmlType.Q6_K;
  for (let i = 0; i < out.length / QK; i++) {
    const d = k ? kMeta[2 * i]! : fromHalfBits(meta[i]! & 0xffff);
    const m = k ? kMeta[2 * i + 1]! : fromHalfBits(meta[i]! >>> 16);
    for (let j = 0; j < QK; j++) out[i * QK + j] = planarWeight(tensor, i, j, high[i] ?? 0, d, m);
  }
  return out;
}

function planarWeight(tensor: PlanarTensor, block: number, j: number, qh: number, d: number, m: number): number {
  const f = Math.fround;
  const byteOf = (words: number, k: number) => (tensor.quants[block * words + (k >> 2)]! >>> ((k & 3) * 8)) & 0xff;
  if (tensor.type === GgmlType.Q8_0) return f(((byteOf(8, j) << 24) >> 24) * d);
  // Q6_K: d and m are the scales of weights 0–15 and 16–31.
  if (tensor.type === GgmlType.Q6_K) return f((j < 16 ? d : m) * (byteOf(8, j) - 32));
  const q = j < 16 ? byteOf(4, j) & 15 : byteOf(4, j - 16) >> 4;
  const h = ((qh >>> j) & 1) << 4;
  switch (tensor.type) {
    case GgmlType.Q4_0: return f((q - 8) * d);
    case GgmlType.Q4_1: case GgmlType.Q4_K: return f(f(q * d) + m);
    case GgmlType.Q5_0: return f(((q | h) - 16) * d);
    case GgmlType.Q5_1: case GgmlType.Q5_K: return f(f((q | h) * d) + m);
    default: throw new RangeError(`no planar layout for ${typeName(tensor.type)}`);
  }
}
