import { beforeAll, describe, expect, it } from "vitest";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { realModelPath } from "../../../../../test/helpers/real-model.js";
import { writeTinyGguf } from "../../../../../test/helpers/tiny-gguf.js";
import { dequantize, quantize } from "./codecs.js";
import { dequantizePlanar, repackPlanar } from "./planar.js";
import { GgmlType } from "./quant-types.js";
import { openGgufTensors, readTensor, rowByteSize, type GgufTensorFile } from "./read-tensors.js";

let f32: GgufTensorFile;
let q8: GgufTensorFile;

beforeAll(async () => {
  const dir = await mkdtemp(join(tmpdir(), "kiln-read-tensors-"));
  f32 = await openGgufTensors(await writeTinyGguf(join(dir, "f32.gguf"), 5));
  q8 = await openGgufTensors(await writeTinyGguf(join(dir, "q8.gguf"), 5, { type: "q8_0" }));
});

describe("readTensor on written fixtures", () => {
  it("finds each tensor's bytes: the Q8_0 file holds exactly the quantized F32 weights", async () => {
    for (const name of ["token_embd.weight", "blk.0.attn_k.weight", "blk.1.ffn_down.weight", "output.weight"]) {
      const plain = await readTensor(f32, name);
      const quantized = await readTensor(q8, name);
      expect(quantized).toMatchObject({ type: GgmlType.Q8_0, rows: plain.rows, cols: plain.cols, dims: plain.dims });
      const weights = dequantize(GgmlType.F32, plain.bytes, plain.rows * plain.cols);
      expect(Array.from(quantized.bytes)).toEqual(Array.from(quantize(GgmlType.Q8_0, weights)));
    }
    const norm = await readTensor(q8, "blk.0.attn_norm.weight");
    expect(norm.type).toBe(GgmlType.F32);
    expect(Array.from(dequantize(norm.type, norm.bytes, norm.cols))).toEqual(new Array(64).fill(1));
  });

  it("reads a range of rows, and says which tensor is missing or which rows are out of range", async () => {
    const all = await readTensor(q8, "blk.0.ffn_gate.weight");
    const some = await readTensor(q8, "blk.0.ffn_gate.weight", { first: 3, count: 2 });
    const row = rowByteSize(GgmlType.Q8_0, all.cols);
    expect(some.rows).toBe(2);
    expect(Array.from(some.bytes)).toEqual(Array.from(all.bytes.subarray(3 * row, 5 * row)));
    await expect(readTensor(q8, "blk.9.attn_q.weight")).rejects.toMatchObject({ code: "not_found" });
    await expect(readTensor(q8, "blk.0.ffn_gate.weight", { first: all.rows - 1, count: 2 })).rejects.toThrow(/outside/);
  });
});

describe("readTensor on the real default model", () => {
  it("has Q4_1 layer weights, a Q8_0 token_embd and F32 norms, whose rows decode to finite values", async () => {
    const file = await openGgufTensors(realModelPath());
    const typeOf = (name: string) => file.tensors.get(name)?.type;
    expect(typeOf("token_embd.weight")).toBe(GgmlType.Q8_0);
    expect(typeOf("blk.0.attn_norm.weight")).toBe(GgmlType.F32);
    const layerMatrices = [...file.tensors.values()].filter((t) => t.name.startsWith("blk.") && t.dims.length === 2);
    expect(layerMatrices.length).toBeGreaterThan(0);
    expect(new Set(layerMatrices.map((t) => t.type))).toEqual(new Set([GgmlType.Q4_1]));
    const vocab = file.tensors.get("token_embd.weight")!.dims[1]!;
    const samples = [
      await readTensor(file, "token_embd.weight", { first: 0, count: 2 }),
      await readTensor(file, "token_embd.weight", { first: vocab - 2, count: 2 }),
      await readTensor(file, "blk.0.attn_q.weight", { first: 10, count: 3 }),
      await readTensor(file, "blk.29.ffn_down.weight", { first: 0, count: 2 }),
      await readTensor(file, "output_norm.weight"),
    ];
    for (const tensor of samples) {
      const values = dequantize(tensor.type, tensor.bytes, tensor.rows * tensor.cols);
      expect(values.every(Number.isFinite)).toBe(true);
      expect(values.some((v) => v !== 0)).toBe(true);
      expect(Math.max(...values.map(Math.abs))).toBeLessThan(100);
      expect(dequantizePlanar(repackPlanar(tensor.type, tensor.bytes, tensor.rows, tensor.cols))).toEqual(values);
    }
  });
});
