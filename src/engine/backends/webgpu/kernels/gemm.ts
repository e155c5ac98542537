/**
 * Batched GEMV for prompt evaluation: Y[t] = W·X[t] for the `step.tokens` rows of X, in two designs.
 * - Portable (software adapters): each invocation owns GEMM_ROWS output rows and a tile of GEMM_TILE tokens and walks
 *   K alone: it dequantizes each 32-block of its rows once for all the tile's tokens, and loads each token's slice of
 *   X once for all its rows (loads and decoding are what cost on llvmpipe). No workgroup memory, no barriers.
 * - Split K (real GPUs, gemm-split-k.ts): a workgroup owns a smaller tile and its lanes share K.
 * X is [tokens][COLS]; Y is [tokens][Y_STRIDE] and the row lands at column Y_OFFSET + r, so q, k and v of different
 * types can fill one [tokens][q|k|v] buffer.
 */
import type { GgmlType } from "../gguf/quant-types.js";
import { blockValuesWgsl, declarePlanes, unpackWgsl, weightPlanes } from "./quant-wgsl.js";
import { createKernel } from "./run-kernel.js";
import { stepWgsl } from "./step.js";

/** Tokens an invocation computes (the weight reuse factor). */
export const GEMM_TILE = 8;
/** Rows an invocation computes (the reuse factor of each loaded slice of X; a multiple of 4). */
export const GEMM_ROWS = 12;

/** What a batched GEMV fuses (the same epilogues as the decode GEMV, minus RoPE: NEOX pairs span invocations). */
export interface GemmOptions {
  type: GgmlType;
  /** "store" Y = W·X (+ bias when `bias`); "residual" Y += W·X; "swiglu" Y = silu(W·X)·(U·X), U bound after W. */
  epilogue?: "store" | "residual" | "swiglu";
  bias?: boolean;
  /**
   * Read X as a uniform window of `tokens` tokens (the tile, instead of GEMM_TILE) starting at token `step.first`
   * (one dispatch per tile), `workgroupSize` invocations each. For llvmpipe, which reads a storage buffer through a
   * per-lane loop with a branch per value, but a uniform buffer with plain loads. A window too wide for one uniform
   * binding is bound as `parts` (default 1) bindings of tokens/parts tokens each: the first as x (binding 1), the
   * others after all the other bindings.
   */
  window?: { cols: number; tokens: number; workgroupSize: number; parts?: number };
}

/**
 * Declarations both designs share, after the binding of x (`xDeclaration`): overrides, step, y, W planes,
 * [bias | U planes], the block readers of W (and U) and silu.
 */
export function gemmHeaderWgsl({ type, epilogue = "store", bias = false }: GemmOptions, xDeclaration: string): string {
  const swiglu = epilogue === "swiglu";
  const after = 3 + weightPlanes(type).length;
  return /* wgsl */ `
override ROWS: u32;
override COLS: u32;
override Y_STRIDE: u32;
override Y_OFFSET: u32 = 0;
${stepWgsl}
@group(0) @binding(0) var<uniform> step: Step;
${xDeclaration}
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
${declarePlanes(type, "w", 3)}
${swiglu ? declarePlanes(type, "u", after) : ""}
${bias ? `@group(0) @binding(${after}) var<storage, read> bias: array<f32>;` : ""}
${unpackWgsl}
${blockValuesWgsl(type, "w")}
${swiglu ? blockValuesWgsl(type, "u") : ""}
fn silu(v: f32) -> f32 { return v / (1.0 + exp(-v)); }`;
}

/** The value stored at y[at] for row `row`, from the sums `a` (W·X) and `u` (U·X, swiglu): the fused epilogue. */
export function epilogueValue({ epilogue = "store", bias = false }: GemmOptions, a: string, u: string, at: string, row: string): string {
  if (epilogue === "swiglu") return `silu(${a}) * ${u}`;
  if (epilogue === "residual") return `y[${at}] + ${a}`;
  return bias ? `${a} + bias[${row}]` : a;
}

/**
 * Bindings, in order: step, x, y, W planes, [bias | U planes]. The tile loops are unrolled here, in JS: with constant
 * indices the weights and sums stay in registers (llvmpipe puts dynamically indexed private arrays in memory).
 */
export function gemmWgsl(options: GemmOptions): string {
  const { type, epilogue = "store", bias = false, window } = options;
  const swiglu = epilogue === "swiglu";
  const after = 3 + weightPlanes(type).length;
  const rows = Array.from({ length: GEMM_ROWS }, (_, r) => r);
  const tokens = Array.from({ length: window?.tokens ?? GEMM_TILE }, (_, t) => t);
  const slices = Array.from({ length: 8 }, (_, j) => j);
  const groups = Array.from({ length: GEMM_ROWS / 4 }, (_, g) => g);
  const dots = (m: string, r: number) => slices.map((j) => `dot(${m}${r}[${j}], x${j})`).join(" + ");
  const quad = (m: string, g: number) => `vec4<f32>(${[0, 1, 2, 3].map((k) => dots(m, 4 * g + k)).join(",\n        ")})`;
  const parts = window?.parts ?? 1;
  const partTokens = tokens.length / parts;
  const xPart = (p: number) => (p === 0 ? "x" : `x_${p}`);
  const xWindow = (p: number, binding: number) => `@group(0) @binding(${binding}) var<uniform> ${xPart(p)}: array<vec4<f32>, ${(partTokens * (window?.cols ?? 0)) / 4}>;`;
  // A window's tokens past the batch read the tile's stale rows (inside the buffer, whole tiles); their sums are dropped.
  const xAt = (t: number) => (window ? `${xPart(Math.floor(t / partTokens))}[${t % partTokens}u * (COLS / 4u) + b * 8u` : `x[min(t0 + ${t}u, last) * (COLS / 4u) + b * 8u`);
  const tokenStep = (t: number) => `{
      ${slices.map((j) => `let x${j} = ${xAt(t)} + ${j}u];`).join(" ")}
      ${groups.map((g) => `acc${t}_${g} += ${quad("w", g)};${swiglu ? ` accu${t}_${g} += ${quad("u", g)};` : ""}`).join("\n      ")}
    }`;
  const value = (t: number, r: number) => epilogueValue(options, `acc${t}_${r >> 2}[${r & 3}]`, `accu${t}_${r >> 2}[${r & 3}]`, `at + ${r}u`, `r0 + ${r}u`);
  const store = (t: number) => `if (t0 + ${t}u < count) {
    let at = (t0 + ${t}u) * Y_STRIDE + Y_OFFSET + r0;
    ${rows.map((r) => `if (r0 + ${r}u < ROWS) { y[at + ${r}u] = ${value(t, r)}; }`).join("\n    ")}
  }`;
  return /* wgsl */ `${gemmHeaderWgsl(options, window ? xWindow(0, 1) : "@group(0) @binding(1) var<storage, read> x: array<vec4<f32>>;")}
${Array.from({ length: parts - 1 }, (_, k) => xWindow(k + 1, after + (swiglu ? weightPlanes(type).length : bias ? 1 : 0) + k)).join("\n")}
@compute @workgroup_size(${window?.workgroupSize ?? 64})
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let row_groups = (ROWS + ${GEMM_ROWS - 1}u) / ${GEMM_ROWS}u;
  let r0 = (${window ? "gid.x" : "gid.x % row_groups"}) * ${GEMM_ROWS}u;
  let t0 = ${window ? "step.first" : `(gid.x / row_groups) * ${GEMM_TILE}u`};
  let count = step.tokens;
  if (t0 >= count || r0 >= ROWS) { return; }
  // Past the last row or token, invocations re-read the last one instead of branching in the loop; sums are dropped.
  let last = count - 1u;
  let nb = COLS / 32u;
  ${rows.map((r) => `let rb${r} = min(r0 + ${r}u, ROWS - 1u) * nb;`).join(" ")}
  ${tokens.flatMap((t) => groups.map((g) => `var acc${t}_${g} = vec4<f32>(0.0);${swiglu ? ` var accu${t}_${g} = vec4<f32>(0.0);` : ""}`)).join("\n  ")}
  for (var b = 0u; b < nb; b++) {
    ${rows.map((r) => `let w${r} = w_values(rb${r} + b);${swiglu ? ` let u${r} = u_values(rb${r} + b);` : ""}`).join("\n    ")}
    ${tokens.map(tokenStep).join("\n    ")}
  }
  ${tokens.map(store).join("\n  ")}
}`;
}

/** Where a batched GEMV's rows × cols output lands: columns yOffset.. of rows yStride wide (default: rows). */
export interface GemmShape {
  rows: number;
  cols: number;
  yStride?: number;
  yOffset?: number;
}

/** The override constants of either design. */
export function gemmConstants({ rows, cols, yStride = rows, yOffset = 0 }: GemmShape): Record<string, number> {
  return { ROWS: rows, COLS: cols, Y_STRIDE: yStride, Y_OFFSET: yOffset };
}

/** Pipeline for a portable rows × cols batched GEMV. */
export function createGemm(device: GPUDevice, options: GemmOptions & GemmShape): GPUComputePipeline {
  return createKernel(device, gemmWgsl(options), gemmConstants(options), `gemm-${options.epilogue ?? "store"}`);
}

/** Bytes of the X window of `tokens` tokens of a `cols`-wide windowed GEMM (see GemmOptions.window). */
export function gemmWindowBytes(cols: number, tokens: number): number {
  return tokens * cols * 4;
}

/** Invocations for `tokens` tokens of a rows-row batched GEMV (without a window; with one: one token tile). */
export function gemmInvocations(rows: number, tokens: number): number {
  return Math.ceil(rows / GEMM_ROWS) * Math.ceil(tokens / GEMM_TILE);
}
