import { afterAll, describe, expect, test } from "vitest";
import { GgmlType, typeName } from "../gguf/quant-types.js";
import { createGemm, gemmInvocations, gemmWindowBytes, GEMM_TILE, type GemmOptions } from "./gemm.js";
import { createSplitKGemm, splitKGrid } from "./gemm-split-k.js";
import { stepAt } from "./attention-kit.fixture.js";
import { device, dispatchGrid, noGpu, randomFloats, randomPlanar, uploadPlanes } from "./gpu-test-kit.fixture.js";
import { openSubgroupDevice } from "./subgroup-device.fixture.js";
import { bindBuffers, createStorage, createUniform, dispatch, groupsFor, readFloats } from "./run-kernel.js";
import { encodeStep, STEP_BYTES } from "./step.js";

/** A device on an adapter with fixed-size subgroups (Mesa's lavapipe here), for the subgroup variants; or undefined. */
const subgroupGpu = await openSubgroupDevice();
afterAll(() => subgroupGpu?.destroy());
const subgroupDevice = (): GPUDevice => subgroupGpu!.device;

const ROWS = 22; // not a multiple of the rows per invocation (12) nor of a split-K tile (4): the tail is exercised
const COLS = 512; // 16 blocks: a workgroup's lanes past the 16th hold nothing, and its first subgroups all hold sums
const TOKENS = 11; // not a multiple of the token tile

/** f64 W·X[t] per token and row, with ‖W[r]‖₁·max|X| for the tolerance. */
function reference(w: Float32Array, x: Float32Array): { y: Float64Array; bound: Float64Array } {
  const y = new Float64Array(TOKENS * ROWS);
  const bound = new Float64Array(ROWS);
  const maxX = Math.max(...x.map(Math.abs));
  for (let r = 0; r < ROWS; r++) {
    for (let k = 0; k < COLS; k++) bound[r]! += Math.abs(w[r * COLS + k]!) * maxX * 1e-5;
    for (let t = 0; t < TOKENS; t++) for (let k = 0; k < COLS; k++) y[t * ROWS + r]! += w[r * COLS + k]! * x[t * COLS + k]!;
  }
  return { y, bound };
}

interface Design {
  name: string;
  lanes?: number;
  /** Sum the lanes with subgroup shuffles, on the kit's device with subgroups. */
  subgroups?: boolean;
}

/**
 * The designs every test runs: portable (an invocation walks K alone), and split K with 32 lanes (more lanes than
 * COLS has blocks: half stay idle) and with 4 (each lane takes 4 blocks, and 32 outputs take 8 rounds of stores),
 * its lanes summed in workgroup memory; and split K summed by subgroups: one subgroup per workgroup (as on NVIDIA), and
 * several, whose totals meet in workgroup memory.
 */
const sizeOfSubgroups = subgroupGpu?.info.subgroupSize ?? 0;
const DESIGNS: Design[] = [
  { name: "portable" }, { name: "split K, 32 lanes", lanes: 32 }, { name: "split K, 4 lanes", lanes: 4 },
  { name: "split K, one subgroup of lanes", lanes: sizeOfSubgroups, subgroups: true },
  { name: "split K, 4 subgroups of lanes", lanes: 4 * sizeOfSubgroups, subgroups: true },
];

/** Runs a batched GEMV over TOKENS tokens into a [TOKENS][stride] buffer seeded with `initial`. */
async function runGemm(design: Design, options: GemmOptions, planes: GPUBuffer[], x: Float32Array, initial: Float32Array, stride = ROWS, offset = 0) {
  const on = design.subgroups ? subgroupDevice() : device();
  const y = createStorage(on, initial);
  const shape = { rows: ROWS, cols: COLS, yStride: stride, yOffset: offset };
  const buffers = [stepAt(0, TOKENS, on), createStorage(on, x), y, ...planes];
  const subgroupSize = design.subgroups ? sizeOfSubgroups : undefined;
  if (design.lanes) dispatchGrid(createSplitKGemm(on, { ...options, ...shape, lanes: design.lanes, subgroupSize }), buffers, splitKGrid(ROWS, TOKENS), on);
  else dispatchGrid(createGemm(on, { ...options, ...shape }), buffers, [groupsFor(gemmInvocations(ROWS, TOKENS)), 1], on);
  return readFloats(on, y, initial.length);
}

describe.each(DESIGNS)("batched GEMV kernel (prompt evaluation): $name", (design) => {
  const it = test.skipIf(design.subgroups ? !subgroupGpu : noGpu);
  /** The device this design's buffers live on. */
  const on = () => (design.subgroups ? subgroupDevice() : device());
  const x = randomFloats(TOKENS * COLS, 1);

  // The subgroup sums do not depend on the weights' type (and Mesa's Vulkan renderer compiles each kernel slowly).
  const types = design.subgroups ? [GgmlType.Q4_K] : [GgmlType.F32, GgmlType.Q4_1, GgmlType.Q5_0, GgmlType.Q8_0, GgmlType.Q4_K, GgmlType.Q6_K];
  for (const type of types) {
    it(`computes W·X[t] for every token, ${typeName(type)}`, async () => {
      const { tensor, values } = randomPlanar(type, ROWS, COLS, 300 + type);
      const { y, bound } = reference(values, x);
      const actual = await runGemm(design, { type }, uploadPlanes(tensor, on()), x, new Float32Array(TOKENS * ROWS));
      y.forEach((v, i) => expect(Math.abs(actual[i]! - v)).toBeLessThanOrEqual(bound[i % ROWS]!));
    });
  }

  it("adds a bias, writes columns at an offset of wider rows, and leaves the other columns alone", async () => {
    const { tensor, values } = randomPlanar(GgmlType.Q8_0, ROWS, COLS, 5);
    const bias = randomFloats(ROWS, 6);
    const stride = ROWS + 10;
    const initial = randomFloats(TOKENS * stride, 7);
    const { y, bound } = reference(values, x);
    const actual = await runGemm(design, { type: GgmlType.Q8_0, bias: true }, [...uploadPlanes(tensor, on()), createStorage(on(), bias)], x, initial, stride, 3);
    for (let t = 0; t < TOKENS; t++) {
      for (let c = 0; c < stride; c++) {
        const r = c - 3;
        if (r < 0 || r >= ROWS) expect(actual[t * stride + c]).toBe(initial[t * stride + c]);
        else expect(Math.abs(actual[t * stride + c]! - (y[t * ROWS + r]! + bias[r]!))).toBeLessThanOrEqual(bound[r]! + 1e-6);
      }
    }
  });

  it("adds into Y (residual) and fuses SwiGLU: silu(G·X)·(U·X)", async () => {
    const g = randomPlanar(GgmlType.Q4_K, ROWS, COLS, 8);
    const u = randomPlanar(GgmlType.Q4_K, ROWS, COLS, 9);
    const initial = randomFloats(TOKENS * ROWS, 10);
    const gy = reference(g.values, x);
    const residual = await runGemm(design, { type: GgmlType.Q4_K, epilogue: "residual" }, uploadPlanes(g.tensor, on()), x, initial);
    gy.y.forEach((v, i) => expect(Math.abs(residual[i]! - (v + initial[i]!))).toBeLessThanOrEqual(gy.bound[i % ROWS]! + 1e-6));
    const uy = reference(u.values, x);
    const swiglu = await runGemm(design, { type: GgmlType.Q4_K, epilogue: "swiglu" }, [...uploadPlanes(g.tensor, on()), ...uploadPlanes(u.tensor, on())], x, new Float32Array(TOKENS * ROWS));
    gy.y.forEach((a, i) => {
      const expected = (a / (1 + Math.exp(-a))) * uy.y[i]!;
      const bound = (Math.abs(uy.y[i]!) * gy.bound[i % ROWS]! + Math.abs(a) * uy.bound[i % ROWS]!) * 1.1 + 1e-6;
      expect(Math.abs(swiglu[i]! - expected)).toBeLessThanOrEqual(bound);
    });
  });

  for (const parts of design.name === "portable" ? [1, 2] : []) {
    it(`reads X as uniform windows, one token tile per dispatch, in ${parts} binding(s) per window, to the same sums`, async () => {
      const { tensor, values } = randomPlanar(GgmlType.Q4_K, ROWS, COLS, 11);
      const bias = randomFloats(ROWS, 12);
      const { y, bound } = reference(values, x);
      const tiles = Math.ceil(TOKENS / GEMM_TILE);
      const padded = new Float32Array(tiles * GEMM_TILE * COLS);
      padded.set(x);
      const input = createStorage(device(), padded, "x", GPUBufferUsage.UNIFORM);
      const out = createStorage(device(), TOKENS * ROWS * 4);
      const window = { cols: COLS, tokens: GEMM_TILE, workgroupSize: 8, parts };
      const pipeline = createGemm(device(), { type: GgmlType.Q4_K, bias: true, rows: ROWS, cols: COLS, window });
      const bytes = gemmWindowBytes(COLS, GEMM_TILE / parts);
      dispatch(device(), Array.from({ length: tiles }, (_, tile) => {
        const step = createUniform(device(), STEP_BYTES);
        device().queue.writeBuffer(step, 0, encodeStep(0, TOKENS, tile * GEMM_TILE));
        const [first, ...rest] = Array.from({ length: parts }, (_, p) => ({ buffer: input, offset: tile * GEMM_TILE * COLS * 4 + p * bytes, size: bytes }));
        const buffers = [step, first!, out, ...uploadPlanes(tensor, on()), createStorage(on(), bias), ...rest];
        return { pipeline, bindGroup: bindBuffers(device(), pipeline, buffers), workgroups: 1 };
      }));
      const actual = await readFloats(device(), out, TOKENS * ROWS);
      y.forEach((v, i) => expect(Math.abs(actual[i]! - (v + bias[i % ROWS]!))).toBeLessThanOrEqual(bound[i % ROWS]! + 1e-6));
    });
  }
});
