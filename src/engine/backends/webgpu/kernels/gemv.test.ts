import { afterAll, describe, expect, it } from "vitest";
import { GgmlType, typeName } from "../gguf/quant-types.js";
import { balancedLaunch, createGemv, gemvInvocations, gemvLaunch, type GemvOptions } from "./gemv.js";
import { device, noGpu, randomFloats, randomPlanar, uploadPlanes } from "./gpu-test-kit.fixture.js";
import { openSubgroupDevice } from "./subgroup-device.fixture.js";
import { bindBuffers, createStorage, dispatch, readFloats } from "./run-kernel.js";

/** A device on an adapter with fixed-size subgroups (Mesa's lavapipe here), for the subgroup variants; or undefined. */
const subgroupGpu = await openSubgroupDevice();
afterAll(() => subgroupGpu?.destroy());
const subgroupDevice = (): GPUDevice => subgroupGpu!.device;

const TYPES = [GgmlType.F32, GgmlType.Q4_0, GgmlType.Q4_1, GgmlType.Q5_0, GgmlType.Q5_1, GgmlType.Q8_0, GgmlType.Q4_K, GgmlType.Q5_K, GgmlType.Q6_K];
const ROWS = 22; // not a multiple of 4: the tail invocation is exercised
const COLS = 512; // whole 256-blocks, for the K-quants
const EPS = 1e-5;

/** f64 reference: Σ_k W[r,k]·xs[k] per row, with ‖W[r]‖₁ for the tolerance. */
function matVec(w: Float32Array, xs: Float64Array): { y: Float64Array; l1: Float64Array } {
  const y = new Float64Array(ROWS);
  const l1 = new Float64Array(ROWS);
  for (let r = 0; r < ROWS; r++) {
    for (let k = 0; k < COLS; k++) {
      y[r]! += w[r * COLS + k]! * xs[k]!;
      l1[r]! += Math.abs(w[r * COLS + k]!);
    }
  }
  return { y, l1 };
}

/** Runs one GEMV; `sums` are a normed input's partial sums, `initial` seeds y (residual), `after` follow the planes. */
async function runGemv(options: GemvOptions, planes: GPUBuffer[], x: Float32Array, sums?: Float32Array, initial?: Float32Array, threads = 1, after: GPUBuffer[] = [], on = device()) {
  const y = createStorage(on, initial ?? ROWS * 4);
  const { workgroupSize, workgroups } = gemvLaunch(ROWS, { rowsPerInvocation: options.rowsPerInvocation, lanes: options.lanes, threads });
  const pipeline = createGemv(on, { ...options, rows: ROWS, cols: COLS, eps: EPS, workgroupSize, normParts: sums?.length });
  const buffers = [createStorage(on, x), y, ...(sums ? [createStorage(on, sums)] : []), ...planes, ...after];
  dispatch(on, [{ pipeline, bindGroup: bindBuffers(on, pipeline, buffers), workgroups }]);
  return readFloats(on, y, ROWS);
}

/** What the producer of x hands a normed GEMV: g⊙x, Σx² in chunks (of 8 here), and the f64 x̂ for the reference. */
function prepareNorm(x: Float32Array, gain: Float32Array) {
  const sums = Float32Array.from({ length: COLS / 8 }, (_, c) => x.slice(c * 8, c * 8 + 8).reduce((s, v) => s + v * v, 0));
  const scale = 1 / Math.sqrt(x.reduce((s, v) => s + v * v, 0) / COLS + EPS);
  return { input: Float32Array.from(x, (v, k) => v * gain[k]!), sums, xs: Float64Array.from(x, (v, k) => v * gain[k]! * scale) };
}

/** Checks a normed gate-and-up GEMV with SwiGLU of `type` weights (seeded from `seed`) against the reference. */
async function checkSwiglu(x: Float32Array, type: GgmlType, seed: number, options: Omit<GemvOptions, "type">, on = device()): Promise<void> {
  const { input, sums, xs } = prepareNorm(x, randomFloats(COLS, seed, 2));
  const g = randomPlanar(type, ROWS, COLS, seed + 1);
  const u = randomPlanar(type, ROWS, COLS, seed + 2);
  const gy = matVec(g.values, xs);
  const uy = matVec(u.values, xs);
  const expected = gy.y.map((v, r) => (v / (1 + Math.exp(-v))) * uy.y[r]!);
  // The error of silu(a)·b is bounded by |b|·δa + |silu(a)|·δb, δ as in expectClose.
  const bound = gy.l1.map((l, r) => (Math.abs(uy.y[r]!) * l + Math.abs(gy.y[r]!) * uy.l1[r]!) * 1.1);
  const planes = [...uploadPlanes(g.tensor, on), ...uploadPlanes(u.tensor, on)];
  const actual = await runGemv({ ...options, type, norm: true, epilogue: "swiglu" }, planes, input, sums, undefined, 1, [], on);
  expectClose(actual, expected, bound, Math.max(...xs.map(Math.abs)));
}

/** Asserts |actual − expected| ≤ 1e-5·‖row‖₁·max|input| per row (design §4.1: f32 summation order drift). */
function expectClose(actual: Float32Array, expected: Float64Array, l1: Float64Array, maxInput: number): void {
  for (let r = 0; r < ROWS; r++) expect(Math.abs(actual[r]! - expected[r]!)).toBeLessThanOrEqual(1e-5 * l1[r]! * maxInput + 1e-30);
}

// One lane per row group (the portable kernel), and lanes splitting K (GPUs): 32 lanes over 16 blocks leave half
// the lanes without a block, 4 lanes take 4 blocks each.
const VARIANTS = [
  { rowsPerInvocation: 4, lanes: 1 },
  { rowsPerInvocation: 8, lanes: 1 },
  { rowsPerInvocation: 4, lanes: 32 },
  { rowsPerInvocation: 8, lanes: 4 },
] as const;

describe.skipIf(noGpu).each(VARIANTS)("GEMV kernel (planar weights, $rowsPerInvocation rows per row group, $lanes lanes)", ({ rowsPerInvocation, lanes }) => {
  const x = randomFloats(COLS, 1);
  const maxX = Math.max(...x.map(Math.abs));

  for (const type of TYPES) {
    it(`computes W·x for ${typeName(type)}`, async () => {
      const { tensor, values } = randomPlanar(type, ROWS, COLS, 200 + type);
      const { y, l1 } = matVec(values, Float64Array.from(x));
      expectClose(await runGemv({ type, rowsPerInvocation, lanes }, uploadPlanes(tensor), x), y, l1, maxX);
    });
  }

  it.skipIf(lanes > 1)("gives the same rows with the grid spread over 3 threads (8-wide workgroups)", async () => {
    const { tensor, values } = randomPlanar(GgmlType.Q4_1, ROWS, COLS, 12);
    const { y, l1 } = matVec(values, Float64Array.from(x));
    expectClose(await runGemv({ type: GgmlType.Q4_1, rowsPerInvocation, lanes }, uploadPlanes(tensor), x, undefined, undefined, 3), y, l1, maxX);
  });

  it("applies the RMSNorm its input's producer prepared: rsqrt(Σ/K+ε)·W·(g⊙x)", async () => {
    const { input, sums, xs } = prepareNorm(x, randomFloats(COLS, 3, 2));
    const { tensor, values } = randomPlanar(GgmlType.Q5_1, ROWS, COLS, 4);
    const { y, l1 } = matVec(values, xs);
    expectClose(await runGemv({ type: GgmlType.Q5_1, norm: true, rowsPerInvocation, lanes }, uploadPlanes(tensor), input, sums), y, l1, Math.max(...xs.map(Math.abs)));
  });

  it("prepares the next RMSNorm in the residual epilogue: g⊙y and Σy² per invocation's rows", async () => {
    const initial = randomFloats(ROWS, 12, 4);
    const gain = randomFloats(ROWS, 13, 2);
    const { tensor, values } = randomPlanar(GgmlType.Q4_K, ROWS, COLS, 14);
    const { y, l1 } = matVec(values, Float64Array.from(x));
    const expected = y.map((v, r) => v + initial[r]!);
    const next = createStorage(device(), ROWS * 4);
    const parts = gemvInvocations(ROWS, rowsPerInvocation);
    const sums = createStorage(device(), parts * 4);
    const actual = await runGemv({ type: GgmlType.Q4_K, epilogue: "residual", normNext: true, rowsPerInvocation, lanes }, uploadPlanes(tensor), x, undefined, initial, 1, [createStorage(device(), gain), next, sums]);
    expectClose(actual, expected, l1, maxX);
    const scaled = await readFloats(device(), next, ROWS);
    actual.forEach((v, r) => expect(scaled[r]).toBeCloseTo(v * gain[r]!, 5));
    const partial = await readFloats(device(), sums, parts);
    partial.forEach((s, p) => expect(s).toBeCloseTo(actual.slice(p * rowsPerInvocation, (p + 1) * rowsPerInvocation).reduce((a, v) => a + v * v, 0), 3));
  });

  it("adds into y in the residual epilogue", async () => {
    const initial = randomFloats(ROWS, 5, 4);
    const { tensor, values } = randomPlanar(GgmlType.Q4_0, ROWS, COLS, 6);
    const { y, l1 } = matVec(values, Float64Array.from(x));
    const expected = y.map((v, r) => v + initial[r]!);
    expectClose(await runGemv({ type: GgmlType.Q4_0, epilogue: "residual", rowsPerInvocation, lanes }, uploadPlanes(tensor), x, undefined, initial), expected, l1, maxX);
  });

  it("adds the bias in the store epilogue (qwen2's q/k/v)", async () => {
    const bias = randomFloats(ROWS, 10, 3);
    const { tensor, values } = randomPlanar(GgmlType.Q6_K, ROWS, COLS, 11);
    const { y, l1 } = matVec(values, Float64Array.from(x));
    const actual = await runGemv({ type: GgmlType.Q6_K, bias: true, rowsPerInvocation, lanes }, [...uploadPlanes(tensor), createStorage(device(), bias)], x);
    expectClose(actual, y.map((v, r) => v + bias[r]!), l1, maxX);
  });

  it("fuses gate and up with SwiGLU: silu(G·x̂)·(U·x̂) with the norm", async () => {
    await checkSwiglu(x, GgmlType.Q4_1, 7, { rowsPerInvocation, lanes });
  });
});

// Lanes summed by subgroups (adapters with fixed-size subgroups): a workgroup of one subgroup (as NVIDIA's 32 lanes),
// and of four, whose totals meet in workgroup memory; 1 and 2 vec4 accumulators, 4 with SwiGLU and 8 rows.
const subgroupSize = subgroupGpu?.info.subgroupSize ?? 0;
const SUBGROUP_VARIANTS = [
  { rowsPerInvocation: 4, lanes: subgroupSize, subgroups: 1 },
  { rowsPerInvocation: 8, lanes: 4 * subgroupSize, subgroups: 4 },
] as const;

describe.skipIf(!subgroupGpu).each(SUBGROUP_VARIANTS)("GEMV kernel, lanes summed by subgroups ($rowsPerInvocation rows per row group, $subgroups subgroup(s))", ({ rowsPerInvocation, lanes }) => {
  const x = randomFloats(COLS, 1);
  const maxX = Math.max(...x.map(Math.abs));
  const on = () => subgroupDevice();

  it("computes W·x", async () => {
    const { tensor, values } = randomPlanar(GgmlType.Q4_K, ROWS, COLS, 21);
    const { y, l1 } = matVec(values, Float64Array.from(x));
    expectClose(await runGemv({ type: GgmlType.Q4_K, rowsPerInvocation, lanes, subgroupSize }, uploadPlanes(tensor, on()), x, undefined, undefined, 1, [], on()), y, l1, maxX);
  });

  it("fuses gate and up with SwiGLU and the norm", async () => {
    await checkSwiglu(x, GgmlType.Q6_K, 22, { rowsPerInvocation, lanes, subgroupSize }, on());
  });

  it("prepares the next RMSNorm in the residual epilogue", async () => {
    const initial = randomFloats(ROWS, 25, 4);
    const gain = randomFloats(ROWS, 26, 2);
    const { tensor, values } = randomPlanar(GgmlType.Q8_0, ROWS, COLS, 27);
    const { y, l1 } = matVec(values, Float64Array.from(x));
    const next = createStorage(on(), ROWS * 4);
    const parts = gemvInvocations(ROWS, rowsPerInvocation);
    const sums = createStorage(on(), parts * 4);
    const options = { type: GgmlType.Q8_0, epilogue: "residual", normNext: true, rowsPerInvocation, lanes, subgroupSize } as const;
    const actual = await runGemv(options, uploadPlanes(tensor, on()), x, undefined, initial, 1, [createStorage(on(), gain), next, sums], on());
    expectClose(actual, y.map((v, r) => v + initial[r]!), l1, maxX);
    const scaled = await readFloats(on(), next, ROWS);
    actual.forEach((v, r) => expect(scaled[r]).toBeCloseTo(v * gain[r]!, 5));
    const partial = await readFloats(on(), sums, parts);
    partial.forEach((s, p) => expect(s).toBeCloseTo(actual.slice(p * rowsPerInvocation, (p + 1) * rowsPerInvocation).reduce((a, v) => a + v * v, 0), 3));
  });
});

describe("balancedLaunch", () => {
  it("keeps 64-wide groups for big grids and splits small ones evenly over the threads", () => {
    expect(balancedLaunch(6144, 2)).toEqual({ workgroupSize: 64, workgroups: 96 });
    expect(balancedLaunch(72, 2)).toEqual({ workgroupSize: 40, workgroups: 2 });
    expect(balancedLaunch(192, 2)).toEqual({ workgroupSize: 48, workgroups: 4 });
    expect(balancedLaunch(72, 1)).toEqual({ workgroupSize: 64, workgroups: 2 });
    for (const [n, t] of [[7, 3], [300, 4], [1000, 16]] as const) {
      const { workgroupSize, workgroups } = balancedLaunch(n, t);
      expect(workgroupSize % 8).toBe(0);
      expect(workgroupSize).toBeLessThanOrEqual(128);
      expect(workgroupSize * workgroups).toBeGreaterThanOrEqual(n);
    }
  });
});
