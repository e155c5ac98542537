/**
 * Split-K batched GEMV for real GPUs: Y[t] = W·X[t], with the epilogues of the portable kernel (gemm.ts). Lone
 * invocations walking K leave a GPU idle (the 1,536 × 8,960 down projection of a 64-token batch is 1,024 of them,
 * each reading its rows serially, far apart from its neighbours' reads), so here one workgroup owns SPLIT_K_ROWS
 * rows × GEMM_TILE tokens and its `lanes` stride over the 32-blocks of K: adjacent lanes read adjacent blocks of a
 * row and of each token's X (coalesced). Each lane decodes a block of a row once for all the tile's tokens and keeps
 * partial sums; a tree reduction in workgroup memory adds them, and the first lanes store one output each. Barriers
 * are cheap on a GPU but cost 10–20× on llvmpipe: software adapters keep the portable kernel.
 */
import { epilogueValue, GEMM_TILE, gemmConstants, gemmHeaderWgsl, type GemmOptions, type GemmShape } from "./gemm.js";
import { createKernel } from "./run-kernel.js";

/** Rows of a split-K workgroup's tile. With GEMM_TILE tokens, 32 outputs: one per lane of a 32-lane workgroup. */
export const SPLIT_K_ROWS = 4;

/**
 * Lanes of a split-K workgroup by default: one NVIDIA warp / AMD wave32, so the reduction buffer is 4 KiB (8 with
 * SwiGLU) and a K of 1,536 (48 blocks) still gives every lane a block.
 */
export const GEMM_LANES = 32;

/** A split-K GEMM: the portable kernel's options (no window: X stays a storage buffer) and the lanes sharing K. */
export interface SplitKOptions extends Omit<GemmOptions, "window"> {
  /** A power of two (default GEMM_LANES). */
  lanes?: number;
}

/** Bindings as the portable kernel's: step, x, y, W planes, [bias | U planes]. Dispatch splitKGrid(rows, tokens). */
export function gemmSplitKWgsl(options: SplitKOptions): string {
  const { epilogue = "store", lanes = GEMM_LANES } = options;
  const swiglu = epilogue === "swiglu";
  const rows = Array.from({ length: SPLIT_K_ROWS }, (_, r) => r);
  const tokens = Array.from({ length: GEMM_TILE }, (_, t) => t);
  const dot = (m: string, t: number) => Array.from({ length: 8 }, (_, j) => `dot(${m}[${j}u], x[xb${t} + ${j}u])`).join(" + ");
  // Rows one at a time: a block's 32 weights (64 with U) and the tile's 32 sums stay in registers, X comes from cache.
  const rowStep = (r: number) => `{
      let w = w_values(rb${r} + b);${swiglu ? ` let u = u_values(rb${r} + b);` : ""}
      ${tokens.map((t) => `let xb${t} = xt${t} + b * 8u; a${t}_${r} += ${dot("w", t)};${swiglu ? ` u${t}_${r} += ${dot("u", t)};` : ""}`).join("\n      ")}
    }`;
  const partials = (sums: string, buffer: string) => tokens.map((t) => `${buffer}[${t}u * LANES + lane] = vec4<f32>(${rows.map((r) => `${sums}${t}_${r}`).join(", ")});`).join("\n  ");
  const fold = (buffer: string) => `for (var t = 0u; t < ${GEMM_TILE}u; t++) { ${buffer}[t * LANES + lane] += ${buffer}[t * LANES + lane + half]; }`;
  return /* wgsl */ `${gemmHeaderWgsl(options, "@group(0) @binding(1) var<storage, read> x: array<vec4<f32>>;")}
const LANES = ${lanes}u;
// Per token of the tile, each lane's partial sums of the tile's 4 rows (a vec4).
var<workgroup> part_w: array<vec4<f32>, ${GEMM_TILE * lanes}>;
${swiglu ? `var<workgroup> part_u: array<vec4<f32>, ${GEMM_TILE * lanes}>;` : ""}
@compute @workgroup_size(${lanes})
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lane: u32) {
  let r0 = wg.x * ${SPLIT_K_ROWS}u;
  let t0 = wg.y * ${GEMM_TILE}u;
  let count = step.tokens;
  // The same for the whole workgroup (grids cover the batch's token tiles), so the barriers stay in uniform control flow.
  if (t0 >= count) { return; }
  // Past the last row or token, lanes re-read the last one instead of branching in the loop; those sums are dropped.
  let last = count - 1u;
  let nb = COLS / 32u;
  ${rows.map((r) => `let rb${r} = min(r0 + ${r}u, ROWS - 1u) * nb;`).join(" ")}
  ${tokens.map((t) => `let xt${t} = min(t0 + ${t}u, last) * (COLS / 4u);`).join(" ")}
  ${tokens.map((t) => rows.map((r) => `var a${t}_${r} = 0.0;${swiglu ? ` var u${t}_${r} = 0.0;` : ""}`).join(" ")).join("\n  ")}
  for (var b = lane; b < nb; b += LANES) {
    ${rows.map(rowStep).join("\n    ")}
  }
  ${partials("a", "part_w")}
  ${swiglu ? partials("u", "part_u") : ""}
  for (var half = LANES / 2u; half > 0u; half /= 2u) {
    workgroupBarrier();
    if (lane < half) {
      ${fold("part_w")}
      ${swiglu ? fold("part_u") : ""}
    }
  }
  workgroupBarrier();
  for (var o = lane; o < ${GEMM_TILE * SPLIT_K_ROWS}u; o += LANES) {
    let t = o / ${SPLIT_K_ROWS}u;
    let row = r0 + o % ${SPLIT_K_ROWS}u;
    if (t0 + t < count && row < ROWS) {
      let at = (t0 + t) * Y_STRIDE + Y_OFFSET + row;
      y[at] = ${epilogueValue(options, `part_w[t * LANES][o % ${SPLIT_K_ROWS}u]`, `part_u[t * LANES][o % ${SPLIT_K_ROWS}u]`, "at", "row")};
    }
  }
}`;
}

/** Workgroup memory a split-K GEMM needs (the device's maxComputeWorkgroupStorageSize is 16 KiB by default). */
export function splitKWorkgroupBytes({ epilogue, lanes = GEMM_LANES }: SplitKOptions): number {
  return GEMM_TILE * lanes * 16 * (epilogue === "swiglu" ? 2 : 1);
}

/** Pipeline for a split-K rows × cols batched GEMV. */
export function createSplitKGemm(device: GPUDevice, options: SplitKOptions & GemmShape): GPUComputePipeline {
  const lanes = options.lanes ?? GEMM_LANES;
  if (!Number.isInteger(Math.log2(lanes)) || lanes < 2 || lanes > device.limits.maxComputeInvocationsPerWorkgroup) throw new RangeError(`split-K GEMM lanes must be a power of two from 2 to the device's workgroup size, got ${lanes}`);
  if (splitKWorkgroupBytes(options) > device.limits.maxComputeWorkgroupStorageSize) throw new RangeError(`${lanes} split-K lanes need more workgroup memory than the device has`);
  return createKernel(device, gemmSplitKWgsl(options), gemmConstants(options), `gemm-split-k-${options.epilogue ?? "store"}`);
}

/** Workgroups (x: row tiles, y: token tiles) of a rows-row split-K GEMM over `tokens` tokens. */
export function splitKGrid(rows: number, tokens: number): [number, number] {
  return [Math.ceil(rows / SPLIT_K_ROWS), Math.ceil(tokens / GEMM_TILE)];
}
