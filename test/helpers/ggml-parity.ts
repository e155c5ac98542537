/**
 * Emulation of llama.cpp's CPU rounding for the f64 reference forward pass (webgpu-reference.ts), so tests can
 * tell llama.cpp's deliberate rounding apart from real differences. Read from ggml-cpu (x86 quantizers, rope cache).
 */
import { roundToHalf } from "../../src/engine/backends/webgpu/gguf/half.js";
import type { LlamaConfig } from "../../src/engine/backends/webgpu/model/llama-config.js";

/**
 * Optional emulation of llama.cpp's CPU numerics, to tell its rounding apart from real differences. Off by
 * default: the default pass is exact float64 math on the dequantized weights, the golden model for our kernels.
 */
export interface GgmlParity {
  /**
   * Round each matmul's input as ggml's CPU matmul does for the weight's type: 32-blocks of int8 with an f16
   * scale (its x86 SIMD Q8_0/Q8_1 quantizer) for quantized weights, f16 for F16 weights. With Q4_1/Q5_1
   * weights the m term meets Q8_1's block sum, which ggml keeps in f16.
   */
  activations?: boolean;
  /**
   * Keep K and V in f16 as llama.cpp's default KV cache does; q and the attention weights then meet f16 matmuls
   * too. Matches llama.cpp without flash attention (its CPU flash attention also sums V in f16).
   */
  f16Cache?: boolean;
  /** Build RoPE angles in float32 by repeated multiplication, as ggml's rope cache does. */
  f32Rope?: boolean;
}

/** All of the above: what llama.cpp's CPU backend does with flash attention off. */
export const LLAMA_CPP_CPU: GgmlParity = { activations: true, f16Cache: true, f32Rope: true };

/** cos/sin per rotated pair at one position. */
export interface Rotation {
  cos: Float64Array;
  sin: Float64Array;
}

/** ggml's rope cache: θ starts at pos and is multiplied by powf(base, −2/ropeDim) per pair, all in float32. */
export function ggmlRopeTable(config: LlamaConfig): (position: number) => Rotation {
  const f = Math.fround;
  const step = f(Math.pow(f(config.ropeTheta), f(-2 / config.ropeDim)));
  const freqScale = f(1 / config.ropeScale);
  return (position) => {
    const cos = new Float64Array(config.ropeDim / 2);
    const sin = new Float64Array(config.ropeDim / 2);
    let theta = f(position);
    for (let i = 0; i < cos.length; i++) {
      const angle = f(freqScale * theta);
      cos[i] = f(Math.cos(angle));
      sin[i] = f(Math.sin(angle));
      theta = f(theta * step);
    }
    return { cos, sin };
  };
}

/**
 * A vector as ggml's x86 Q8_0/Q8_1 quantizer leaves it: per 32-block, d = amax/127 (kept as f16),
 * q = rint(x·127/amax); Q8_1 also keeps s = d·Σq in f16 (`sums`).
 */
export function roundLikeGgmlQ8(x: Float64Array): { values: Float64Array; sums: Float64Array } {
  const f = Math.fround;
  const values = new Float64Array(x.length);
  const sums = new Float64Array(x.length / 32);
  for (let at = 0; at < x.length; at += 32) {
    const block = Float32Array.from(x.subarray(at, at + 32));
    const amax = block.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
    const d = f(amax / 127);
    const id = amax ? f(127 / amax) : 0;
    let sum = 0;
    block.forEach((v, j) => {
      const q = roundHalfEven(f(v * id));
      sum += q;
      values[at + j] = q * roundToHalf(d);
    });
    sums[at / 32] = roundToHalf(f(d * sum));
  }
  return { values, sums };
}

/** Σ over a row's blocks of m·(s − Σ values): what ggml's Q8_1 sum adds beyond the dequantized product. */
export function blockSumCorrection(mins: Float32Array, firstBlock: number, values: Float64Array, sums: Float64Array): number {
  let correction = 0;
  for (let b = 0; b < sums.length; b++) {
    let exact = 0;
    for (let j = 0; j < 32; j++) exact += values[b * 32 + j]!;
    correction += mins[firstBlock + b]! * (sums[b]! - exact);
  }
  return correction;
}

/** Rounds to the nearest integer, ties to even (the SIMD rounding mode). */
function roundHalfEven(v: number): number {
  const r = Math.round(v);
  return r - v === 0.5 && r % 2 !== 0 ? r - 1 : r;
}
