/**
 * IEEE 754 binary16 conversions. Node 20 has no Float16Array or Math.f16round, so GGUF's f16 scales and F16
 * tensors are converted by hand, rounding to nearest even like ggml's `GGML_FP32_TO_FP16`.
 */

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

/** The f16 bits nearest to `value` (round to nearest, ties to even; overflow gives ±Inf; NaN stays NaN). */
export function toHalfBits(value: number): number {
  f32[0] = value;
  const bits = u32[0]!;
  const sign = (bits >>> 16) & 0x8000;
  const exponent = (bits >>> 23) & 0xff;
  const mantissa = bits & 0x7fffff;
  if (exponent === 0xff) return sign | 0x7c00 | (mantissa ? 0x200 : 0);
  const e = exponent - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign;
    // Subnormal half: shift the implicit-one mantissa into place, rounding to nearest even.
    const full = mantissa | 0x800000;
    const shift = 14 - e;
    return sign | roundShift(full, shift);
  }
  // Rounding may carry into the exponent (and up to Inf), which the plain addition handles.
  return sign | ((e << 10) + roundShift(mantissa, 13));
}

/** The value of f16 bits, as a number (exact: every f16 is a float32). */
export function fromHalfBits(half: number): number {
  const sign = half & 0x8000 ? -1 : 1;
  const exponent = (half >>> 10) & 0x1f;
  const mantissa = half & 0x3ff;
  if (exponent === 0) return sign * mantissa * 2 ** -24;
  if (exponent === 0x1f) return mantissa ? NaN : sign * Infinity;
  return sign * (1024 + mantissa) * 2 ** (exponent - 25);
}

/** `value` rounded through f16 and back. */
export function roundToHalf(value: number): number {
  return fromHalfBits(toHalfBits(value));
}

function roundShift(value: number, shift: number): number {
  const kept = value >>> shift;
  const rest = value & ((1 << shift) - 1);
  const halfway = 1 << (shift - 1);
  return rest > halfway || (rest === halfway && (kept & 1) === 1) ? kept + 1 : kept;
}
