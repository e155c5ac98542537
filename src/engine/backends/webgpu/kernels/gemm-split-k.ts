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
import { SUBGROUP_BUILTINS, SUBGROUPS_ENABLE, transposeSum } from "./subgroup-sum.js";

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
  /**
   * The adapter's fixed subgroup size, where it offers `subgroups` (see subgroup-sum.ts): the lanes' sums meet
   * through subgroup shuffles, and only subgroups (when a workgroup holds several) through workgroup memory. At most
   * `lanes`; undefined: the tree in workgroup memory.
   */
  subgroupSize?: number;
}

/** Bindings as the portable kernel's: step, x, y, W planes, [bias | U planes]. Dispatch splitKGrid(rows, tokens). */
export function gemmSplitKWgsl(options: SplitKOptions): string {
  const { epilogue = "store", lanes = GEMM_LANES, subgroupSize } = options;
  if (subgroupSize !== undefined && subgroupSize > lanes) throw new RangeError(`a subgroup of ${subgroupSize} lanes does not fit a workgroup of ${lanes}`);
  const swiglu = epilogue === "swiglu";
  const rows = Array.from({ length: SPLIT_K_ROWS }, (_, r) => r);
  const tokens = Array.from({ length: GEMM_TILE }, (_, t) => t);
  const dot = (m: string, t: number) => Array.from({ length: 8 }, (_, j) => `dot(${m}[${j}u], x[xb${t} + ${j}u])`).join(" + ");
  // Rows one at a time: a block's 32 weights (64 with U) and the tile's 32 sums stay in registers, X comes from cache.
  const rowStep = (r: number) => `{
      let w = w_values(rb${r} + b);${swiglu ? ` let u = u_values(rb${r} + b);` : ""}
      ${tokens.map((t) => `let xb${t} = xt${t} + b * 8u; a${t}_${r} += ${dot("w", t)};${swiglu ? ` u${t}_${r} += ${dot("u", t)};` : ""}`).join("\n      ")}
    }`;
  const tail = subgroupSize ? subgroupTail(options, lanes, subgroupSize) : treeTail(options, lanes);
  return /* wgsl */ `${subgroupSize ? SUBGROUPS_ENABLE : ""}
${gemmHeaderWgsl(options, "@group(0) @binding(1) var<storage, read> x: array<vec4<f32>>;")}
const LANES = ${lanes}u;
${tail.declarations}
@compute @workgroup_size(${lanes})
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lane: u32${subgroupSize ? `, ${SUBGROUP_BUILTINS}` : ""}) {
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
  ${tail.code}
}`;
}

/** Outputs of a workgroup's tile: output o is token o / SPLIT_K_ROWS, row o % SPLIT_K_ROWS. */
const OUTPUTS = GEMM_TILE * SPLIT_K_ROWS;

/** The store of output `o` (a u32 expression) from its sums `a` (and `u`), when its token and row exist. */
function storeOutput(options: SplitKOptions, o: string, a: string, u: string, guard = "true"): string {
  return `{
    let t = ${o} / ${SPLIT_K_ROWS}u;
    let row = r0 + ${o} % ${SPLIT_K_ROWS}u;
    if (${guard} && t0 + t < count && row < ROWS) {
      let at = (t0 + t) * Y_STRIDE + Y_OFFSET + row;
      y[at] = ${epilogueValue(options, a, u, "at", "row")};
    }
  }`;
}

/**
 * The lanes' partial sums meet in workgroup memory: a tree of log2(lanes) rounds, each a barrier and a pass over
 * the tile's outputs; then the first lanes store one output each.
 */
function treeTail(options: SplitKOptions, lanes: number): { declarations: string; code: string } {
  const swiglu = options.epilogue === "swiglu";
  const tokens = Array.from({ length: GEMM_TILE }, (_, t) => t);
  const row4 = (sums: string, t: number) => `vec4<f32>(${Array.from({ length: SPLIT_K_ROWS }, (_, r) => `${sums}${t}_${r}`).join(", ")})`;
  const partials = (sums: string, buffer: string) => tokens.map((t) => `${buffer}[${t}u * LANES + lane] = ${row4(sums, t)};`).join("\n  ");
  const fold = (buffer: string) => `for (var t = 0u; t < ${GEMM_TILE}u; t++) { ${buffer}[t * LANES + lane] += ${buffer}[t * LANES + lane + half]; }`;
  const at = (buffer: string) => `${buffer}[(o / ${SPLIT_K_ROWS}u) * LANES][o % ${SPLIT_K_ROWS}u]`;
  return {
    // Per token of the tile, each lane's partial sums of the tile's 4 rows (a vec4).
    declarations: `var<workgroup> part_w: array<vec4<f32>, ${GEMM_TILE * lanes}>;
${swiglu ? `var<workgroup> part_u: array<vec4<f32>, ${GEMM_TILE * lanes}>;` : ""}`,
    code: `${partials("a", "part_w")}
  ${swiglu ? partials("u", "part_u") : ""}
  for (var half = LANES / 2u; half > 0u; half /= 2u) {
    workgroupBarrier();
    if (lane < half) {
      ${fold("part_w")}
      ${swiglu ? fold("part_u") : ""}
    }
  }
  workgroupBarrier();
  for (var o = lane; o < ${OUTPUTS}u; o += LANES) ${storeOutput(options, "o", at("part_w"), at("part_u"))}`,
  };
}

/**
 * The lanes' partial sums meet through subgroup shuffles (transposeSum: each lane ends with OUTPUTS / size finished
 * outputs of its subgroup); where a workgroup holds several subgroups, their totals meet in workgroup memory after
 * one barrier.
 */
function subgroupTail(options: SplitKOptions, lanes: number, size: number): { declarations: string; code: string } {
  const swiglu = options.epilogue === "swiglu";
  const order = Array.from({ length: OUTPUTS }, (_, o) => `${Math.floor(o / SPLIT_K_ROWS)}_${o % SPLIT_K_ROWS}`);
  const sums = transposeSum(swiglu ? [order.map((o) => `a${o}`), order.map((o) => `u${o}`)] : [order.map((o) => `a${o}`)], size);
  const [a, u = []] = sums.kept;
  const subgroups = lanes / size;
  if (subgroups === 1) {
    return { declarations: "", code: `${sums.code}
  ${a.map((value, i) => storeOutput(options, `(${sums.base} + ${i}u)`, value, u[i] ?? "", sums.owner)).join("\n  ")}` };
  }
  const write = (buffer: string, kept: string[]) => kept.map((value, i) => `${buffer}[sg_id * ${OUTPUTS}u + ${sums.base} + ${i}u] = ${value};`).join(" ");
  // Parenthesized: the epilogue multiplies it (SwiGLU).
  const total = (buffer: string) => `(${Array.from({ length: subgroups }, (_, s) => `${buffer}[${s * OUTPUTS}u + o]`).join(" + ")})`;
  return {
    declarations: `var<workgroup> part_w: array<f32, ${subgroups * OUTPUTS}>;
${swiglu ? `var<workgroup> part_u: array<f32, ${subgroups * OUTPUTS}>;` : ""}`,
    code: `${sums.code}
  if (${sums.owner}) { ${write("part_w", a)} ${swiglu ? write("part_u", u) : ""} }
  workgroupBarrier();
  for (var o = lane; o < ${OUTPUTS}u; o += LANES) ${storeOutput(options, "o", total("part_w"), total("part_u"))}`,
  };
}

/** Workgroup memory a split-K GEMM needs (the device's maxComputeWorkgroupStorageSize is 16 KiB by default). */
export function splitKWorkgroupBytes({ epilogue, lanes = GEMM_LANES, subgroupSize }: SplitKOptions): number {
  const perSet = subgroupSize ? (lanes / subgroupSize) * OUTPUTS * 4 : GEMM_TILE * lanes * 16;
  return perSet * (epilogue === "swiglu" ? 2 : 1);
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
