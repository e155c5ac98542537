/**
 * Portable GEMV over planar weights: y = W·x for one token. Each invocation owns 4 (or 8) consecutive rows and
 * walks K alone (no workgroup memory, no barriers: barriers cost 10–20× on llvmpipe), reusing each 32-slice of x
 * for all its rows. Options fuse the neighbours of a GEMV so they need no dispatch of their own.
 */
import type { GgmlType } from "../gguf/quant-types.js";
import { blockDotWgsl, declarePlanes, unpackWgsl, weightPlanes } from "./quant-wgsl.js";
import { attentionPrologueWgsl } from "./attention-prologue.js";
import { ropeKvEpilogueWgsl, shapeConstants, type AttentionShape } from "./rope.js";
import { createKernel } from "./run-kernel.js";
import { SUBGROUP_BUILTINS, SUBGROUPS_ENABLE } from "./subgroup-sum.js";

/** What a GEMV fuses. */
export interface GemvOptions {
  type: GgmlType;
  /**
   * RMSNorm of the input, split with the kernel that produced it: x holds g⊙x and `sums` (bound after y) the
   * partial Σx² of its NORM_PARTS chunks, both written by that kernel (see `normNext`). The norm scalar factors out of
   * the dot product: y = rsqrt(Σ/K+ε)·W·(g⊙x), and nothing is recomputed per invocation.
   */
  norm?: boolean;
  /**
   * "residual" only: also prepare the next RMSNorm of y: write g⊙y and each invocation's Σy² (one per
   * rowsPerInvocation rows), with g, g⊙y and the sums bound after W.
   */
  normNext?: boolean;
  /**
   * "store" y = W·x; "residual" y += W·x (x and y must differ); "swiglu" y = silu(W·x)·(U·x), U bound after W;
   * "rope-kv" (W = q|k|v stacked) rotates q and k, stores all rows to y and k, v into the caches (see rope.ts).
   */
  epilogue?: "store" | "residual" | "swiglu" | "rope-kv";
  /** "store" or "rope-kv": y = W·x + b, with the bias b bound right after W (qwen2's q/k/v). */
  bias?: boolean;
  /**
   * W is q, k and v stacked but of different types (a Q4_K_M file's Q6_K attn_v): one matrix per entry, each with
   * its own planes, bound one after the other. `type` is then unused. Boundaries are multiples of the rows per
   * invocation, so an invocation reads one matrix only.
   */
  parts?: { type: GgmlType; rows: number }[];
  /**
   * The input is the attention output, computed first by each workgroup from q (bound as x) and the KV caches
   * (attention-prologue.ts; software adapters). Its bindings (step, k_cache, v_cache) follow W.
   */
  attend?: boolean;
  /**
   * Rows each invocation owns (default 4). Its x slice is loaded once per block for all of them, and loads dominate
   * on llvmpipe, so 8 is faster there; 4 keeps more invocations in flight on a real GPU.
   */
  rowsPerInvocation?: 4 | 8;
  /**
   * Lanes sharing each row group's K loop (default 1: the portable kernel). With more, a workgroup of `lanes`
   * invocations owns the row group: lane i reads 32-blocks i, i + lanes, … (adjacent lanes, adjacent blocks), the
   * partial sums meet in workgroup memory, and lane 0 runs the epilogue. A real GPU needs this: one invocation per 4
   * rows walking K alone leaves it nearly idle (1,536 rows: 384 invocations reading 8,960 values each).
   */
  lanes?: number;
  /**
   * The adapter's fixed subgroup size, where it offers `subgroups` (at most `lanes`): the lanes' sums meet through
   * subgroupAdd, and only subgroups (when a workgroup holds several) through workgroup memory, after one barrier.
   */
  subgroupSize?: number;
}

/** Bindings, in order: x, y, [gain], W planes, [bias | U planes | step, table, k_cache, v_cache]. */
export function gemvWgsl({ type, norm = false, normNext = false, epilogue = "store", bias = false, rowsPerInvocation: ROWS_PER = 4, parts, attend = false, lanes = 1, subgroupSize, shape }: GemvOptions & { shape?: AttentionShape }): string {
  const kv = shape?.kv ?? "f32";
  if (lanes < 1 || (lanes & (lanes - 1)) !== 0) throw new RangeError(`GEMV lanes must be a power of two, got ${lanes}`);
  if (subgroupSize !== undefined && (lanes === 1 || subgroupSize > lanes)) throw new RangeError(`subgroup sums need a workgroup of lanes at least a subgroup wide (${subgroupSize} > ${lanes})`);
  if (attend && lanes > 1) throw new RangeError("the attention prologue goes with one lane per row group");
  if (attend && !shape) throw new RangeError("an attention prologue needs the attention shape");
  if (bias && epilogue !== "store" && epilogue !== "rope-kv") throw new RangeError("a GEMV bias goes with the store and rope-kv epilogues only");
  if (normNext && epilogue !== "residual") throw new RangeError("a GEMV prepares the next norm in the residual epilogue only");
  const first = norm ? 3 : 2;
  const swiglu = epilogue === "swiglu";
  const types = parts?.map((part) => part.type) ?? [type];
  const prefix = (k: number) => (parts ? `w${k}` : "w");
  let binding = first;
  const planes = types.map((t, k) => {
    const declared = declarePlanes(t, prefix(k), binding);
    binding += weightPlanes(t).length;
    return declared;
  });
  const afterW = binding;
  const next = afterW + (attend ? 3 : 0);
  const groups = Array.from({ length: ROWS_PER / 4 }, (_, v) => v);
  const rowsOf = (p: string, v: number) => `vec4<f32>(${[0, 1, 2, 3].map((t) => `${p}_dot(rb${4 * v + t} + b)`).join(", ")})`;
  const value = swiglu ? "silu(a[t]) * u[t]" : epilogue === "residual" ? "y[r + t] + a[t]" : bias ? "a[t] + bias[r + t]" : "a[t]";
  // The K loop over one matrix: each 32-block of x is loaded once for all the invocation's rows.
  const loop = (p: string) => `for (var b = ${lanes > 1 ? "lane" : "0u"}; b < nb; b += ${lanes}u) {
    var s = array<vec4<f32>, 2>(vec4<f32>(0.0), vec4<f32>(0.0));
    for (var j = 0u; j < 8u; j++) {
      let v = ${attend ? "xs" : "x"}[b * 8u + j];
      xv[j] = v;
      s[j / 4u] += v;
    }
    xhalf = vec2<f32>(dot(s[0], vec4<f32>(1.0)), dot(s[1], vec4<f32>(1.0)));
    xsum = xhalf.x + xhalf.y;
    ${groups.map((v) => `acc${v} += ${rowsOf(p, v)};${swiglu ? ` accu${v} += ${rowsOf("u", v)};` : ""}`).join("\n    ")}
  }`;
  // Several matrices: the invocation's part picks one, outside the loop (llvmpipe runs both sides of a branch for
  // its SIMD lanes, so a branch inside the loop would decode every type for every row).
  const body = parts ? types.map((_, k) => `${k ? " else " : ""}${k < types.length - 1 ? `if (part == ${k}u) ` : ""}{\n  ${loop(prefix(k))}\n  }`).join("") : loop("w");
  const accumulators = groups.flatMap((v) => (swiglu ? [`acc${v}`, `accu${v}`] : [`acc${v}`]));
  const store = (v: number) => (epilogue === "rope-kv" ? `if (r0 + ${4 * v}u < ROWS) { store_rows(r0 + ${4 * v}u, acc${v}); }` : `${normNext ? "ss += " : ""}store4(r0 + ${4 * v}u, acc${v}${swiglu ? `, accu${v}` : ""});`);
  const sumLanes = subgroupSize ? reduceSubgroups(lanes, subgroupSize, accumulators) : reduceLanes(lanes, accumulators);
  // Workgroup memory for the lanes' sums: one slot a lane for the tree, one a subgroup past the first with subgroups.
  const partialSlots = lanes === 1 ? 0 : subgroupSize ? (lanes > subgroupSize ? lanes / subgroupSize : 0) : lanes;
  return /* wgsl */ `${subgroupSize ? SUBGROUPS_ENABLE : ""}
override ROWS: u32;
override COLS: u32;
override EPS: f32 = 1e-5;
override WG: u32 = 64;
@group(0) @binding(0) var<storage, read> ${attend ? "q" : "x"}: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
${norm ? "override NORM_PARTS: u32;\n@group(0) @binding(2) var<storage, read> sums: array<f32>;" : ""}
${planes.join("\n")}
${parts ? partBoundsWgsl(parts.length) : ""}
${swiglu ? declarePlanes(type, "u", afterW) : ""}
${bias ? `@group(0) @binding(${afterW}) var<storage, read> bias: array<f32>;` : ""}
${epilogue === "rope-kv" ? ropeKvEpilogueWgsl(afterW + (bias ? 1 : 0), kv, bias) : ""}
${attend ? attentionPrologueWgsl(afterW, shape!) : ""}
${normNext ? `@group(0) @binding(${next}) var<storage, read> next_gain: array<f32>;
@group(0) @binding(${next + 1}) var<storage, read_write> next_x: array<f32>;
@group(0) @binding(${next + 2}) var<storage, read_write> next_sums: array<f32>;` : ""}
${partialSlots > 0 ? `var<workgroup> partial: array<vec4<f32>, ${partialSlots * accumulators.length}>;` : ""}
var<private> xv: array<vec4<f32>, 8>;
var<private> xsum: f32;
var<private> xhalf: vec2<f32>;
${unpackWgsl}
${types.map((t, k) => blockDotWgsl(t, prefix(k))).join("\n")}
${swiglu ? blockDotWgsl(type, "u") : ""}
fn silu(v: f32) -> f32 { return v / (1.0 + exp(-v)); }
${normNext ? `fn store4(r: u32, a: vec4<f32>) -> f32 {
  var ss = 0.0;
  for (var t = 0u; t < 4u; t++) {
    if (r + t < ROWS) { let v = ${value}; y[r + t] = v; next_x[r + t] = v * next_gain[r + t]; ss += v * v; }
  }
  return ss;
}` : `fn store4(r: u32, a: vec4<f32>${swiglu ? ", u: vec4<f32>" : ""}) {
  for (var t = 0u; t < 4u; t++) { if (r + t < ROWS) { y[r + t] = ${value}; } }
}`}
@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lane: u32${subgroupSize ? `, ${SUBGROUP_BUILTINS}` : ""}) {
  ${attend ? "attend(lane); // before any return: every lane reaches its barrier" : ""}
  let group = ${lanes > 1 ? "wid.x" : "gid.x"};
  let r0 = group * ${ROWS_PER}u;
  if (r0 >= ROWS) { return; }
  let nb = COLS / 32u;
  // The tail invocation re-reads the last row instead of branching in the hot loop; its extra sums are dropped.
  ${parts ? "let part = part_of(r0);" : ""}
  ${Array.from({ length: ROWS_PER }, (_, t) => `let rb${t} = (min(r0 + ${t}u, ROWS - 1u)${parts ? " - part_start(part)" : ""}) * nb;`).join(" ")}
  ${groups.map((v) => `var acc${v} = vec4<f32>(0.0);${swiglu ? ` var accu${v} = vec4<f32>(0.0);` : ""}`).join(" ")}
  ${body}
  ${lanes > 1 ? sumLanes : ""}
  ${norm ? normScale(swiglu, groups) : ""}
  ${normNext ? "var ss = 0.0;" : ""}
  ${groups.map(store).join("\n  ")}
  ${normNext ? "next_sums[group] = ss;" : ""}
}`;
}

/** Part boundaries as override constants PART1.. (first rows of the second matrix on), and lookups by row. */
function partBoundsWgsl(count: number): string {
  const bounds = Array.from({ length: count - 1 }, (_, k) => k + 1);
  return `${bounds.map((k) => `override PART${k}: u32;`).join("\n")}
fn part_of(r: u32) -> u32 { return ${bounds.map((k) => `select(0u, 1u, r >= PART${k})`).join(" + ")}; }
fn part_start(part: u32) -> u32 { return ${bounds.reduceRight((inner, k) => `select(${inner}, PART${k}, part == ${k}u)`, "0u")}; }`;
}

/**
 * Sums the lanes' accumulators in workgroup memory (a tree: log2(lanes) barriers, in uniform control flow since
 * a workgroup's lanes share r0) and leaves lane 0 alone, holding the totals, for the epilogue.
 */
function reduceLanes(lanes: number, accumulators: string[]): string {
  const n = accumulators.length;
  return `${accumulators.map((a, k) => `partial[lane * ${n}u + ${k}u] = ${a};`).join(" ")}
  for (var half = ${lanes / 2}u; half > 0u; half >>= 1u) {
    workgroupBarrier();
    if (lane < half) {
      for (var k = 0u; k < ${n}u; k++) { partial[lane * ${n}u + k] += partial[(lane + half) * ${n}u + k]; }
    }
  }
  if (lane != 0u) { return; }
  ${accumulators.map((a, k) => `${a} = partial[${k}u];`).join(" ")}`;
}

/** The lanes' sums by subgroupAdd, subgroups' totals through workgroup memory; leaves lane 0 alone, holding them. */
function reduceSubgroups(lanes: number, size: number, accumulators: string[]): string {
  const n = accumulators.length;
  const subgroups = lanes / size;
  const add = accumulators.map((a) => `${a} = subgroupAdd(${a});`).join(" ");
  if (subgroups === 1) return `${add}
  if (lane != 0u) { return; }`;
  const total = (k: number) => Array.from({ length: subgroups }, (_, s) => `partial[${s * n + k}u]`).join(" + ");
  return `${add}
  if (sg_lane == 0u) { ${accumulators.map((a, k) => `partial[sg_id * ${n}u + ${k}u] = ${a};`).join(" ")} }
  workgroupBarrier();
  if (lane != 0u) { return; }
  ${accumulators.map((a, k) => `${a} = ${total(k)};`).join(" ")}`;
}

function normScale(swiglu: boolean, groups: number[]): string {
  // Every invocation adds the producer's NORM_PARTS partial sums itself: a few floats, and no barrier.
  return `var ss = 0.0;
  for (var k = 0u; k < NORM_PARTS; k++) { ss += sums[k]; }
  let scale = inverseSqrt(ss / f32(COLS) + EPS);
  ${groups.map((v) => `acc${v} *= scale;${swiglu ? ` accu${v} *= scale;` : ""}`).join(" ")}`;
}

/** Pipeline for a rows × cols GEMV (dispatch gemvLaunch(rows, …).workgroups, with its workgroupSize). */
export function createGemv(
  device: GPUDevice,
  options: GemvOptions & { rows: number; cols: number; eps?: number; attention?: AttentionShape; workgroupSize?: number; normParts?: number },
): GPUComputePipeline {
  // With lanes, the workgroup is the row group's lanes (the reduction's buffer is sized for them).
  const lanes = options.lanes ?? 1;
  const constants: Record<string, number> = { ROWS: options.rows, COLS: options.cols, WG: lanes > 1 ? lanes : (options.workgroupSize ?? 64) };
  if (options.epilogue === "rope-kv") {
    const s = options.attention;
    if (!s || s.headDim % 4 !== 0 || options.rows !== (s.heads + 2 * s.kvHeads) * s.headDim) throw new RangeError("rope-kv needs q|k|v rows and a head dim that is a multiple of 4");
    Object.assign(constants, shapeConstants(s));
  }
  if (options.norm) Object.assign(constants, { EPS: options.eps ?? 1e-5, NORM_PARTS: options.normParts ?? Math.ceil(options.cols / (options.rowsPerInvocation ?? 4)) });
  options.parts?.slice(0, -1).reduce((start, part, k) => ((constants[`PART${k + 1}`] = start + part.rows), start + part.rows), 0);
  if (options.attend && options.attention) Object.assign(constants, shapeConstants(options.attention));
  return createKernel(device, gemvWgsl({ ...options, shape: options.attention }), constants, `gemv-${options.epilogue ?? "store"}`);
}

/**
 * Workgroup size and count for `invocations`, spreading a small grid evenly over `threads` (llvmpipe runs each
 * workgroup on one thread: 72 invocations as 64 + 8 would leave one core idle most of the time). Sizes stay
 * multiples of 8 (llvmpipe's SIMD width) and ≤ 128 (compat's default limit).
 */
export function balancedLaunch(invocations: number, threads = 1): { workgroupSize: number; workgroups: number } {
  if (threads <= 1 || invocations >= 64 * threads * 8) return { workgroupSize: 64, workgroups: Math.max(1, Math.ceil(invocations / 64)) };
  const groups = threads * Math.ceil(invocations / (64 * threads));
  const workgroupSize = Math.min(128, Math.ceil(invocations / groups / 8) * 8);
  return { workgroupSize, workgroups: Math.ceil(invocations / workgroupSize) };
}

/** Workgroup size and count of a rows-row GEMV: one workgroup per row group with lanes > 1, else balancedLaunch. */
export function gemvLaunch(rows: number, { rowsPerInvocation = 4, lanes = 1, threads = 1 }: { rowsPerInvocation?: number; lanes?: number; threads?: number } = {}): { workgroupSize: number; workgroups: number } {
  if (lanes > 1) return { workgroupSize: lanes, workgroups: gemvInvocations(rows, rowsPerInvocation) };
  return balancedLaunch(gemvInvocations(rows, rowsPerInvocation), threads);
}

/** Invocations (row groups) a rows-row GEMV needs. */
export function gemvInvocations(rows: number, rowsPerInvocation = 4): number {
  return Math.ceil(rows / rowsPerInvocation);
}
