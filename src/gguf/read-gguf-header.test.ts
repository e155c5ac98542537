import { describe, expect, it } from "vitest";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describeGguf } from "./describe-gguf.js";
import { GgufFormatError, GgufType, parseGgufHeader, readGgufHeader } from "./read-gguf-header.js";
import { encodeGguf, type GgufEntry } from "./encode-gguf.js";

const longVocab = Array.from({ length: 3000 }, (_, i) => `tok${i}`);
const metadata: GgufEntry[] = [
  { key: "general.architecture", type: GgufType.STRING, value: "llama" },
  { key: "general.file_type", type: GgufType.UINT32, value: 3 },
  { key: "llama.context_length", type: GgufType.UINT64, value: 8192 },
  { key: "llama.attention.layer_norm_rms_epsilon", type: GgufType.FLOAT32, value: 0.5 },
  { key: "tokenizer.ggml.add_bos_token", type: GgufType.BOOL, value: true },
  { key: "tokenizer.ggml.tokens", type: GgufType.ARRAY, itemType: GgufType.STRING, value: longVocab },
  { key: "tokenizer.ggml.token_type", type: GgufType.ARRAY, itemType: GgufType.INT32, value: [1, -1, 3] },
  { key: "tokenizer.chat_template", type: GgufType.STRING, value: "{{ messages }}" },
];
const tensors = [
  { name: "a", dims: [4, 3], data: new Float32Array(12).fill(1) },
  { name: "b", dims: [5], data: new Float32Array(5) },
];
const bytes = encodeGguf(metadata, tensors);

describe("parseGgufHeader", () => {
  it("reads back every kind of value the writer wrote, keeping only the length of long arrays", () => {
    const header = parseGgufHeader(bytes);
    expect(header.version).toBe(3);
    expect(header.metadata).toEqual({
      "general.architecture": "llama", "general.file_type": 3, "llama.context_length": 8192,
      "llama.attention.layer_norm_rms_epsilon": 0.5, "tokenizer.ggml.add_bos_token": true,
      "tokenizer.ggml.tokens": { itemType: GgufType.STRING, length: 3000 },
      "tokenizer.ggml.token_type": [1, -1, 3], "tokenizer.chat_template": "{{ messages }}",
    });
    expect(header.tensors).toEqual([
      { name: "a", dims: [4, 3], type: 0, offset: 0 },
      { name: "b", dims: [5], type: 0, offset: 64 },
    ]);
  });

  it("refuses bytes that are not GGUF, and a header cut short", () => {
    expect(() => parseGgufHeader(Buffer.from("PK\u0003\u0004 not a model"))).toThrow(GgufFormatError);
    expect(() => parseGgufHeader(bytes.subarray(0, 200))).toThrow(/truncated/);
  });
});

describe("readGgufHeader", () => {
  it("reads a header from a file, and says when the file ends inside it", async () => {
    const dir = await mkdtemp(join(tmpdir(), "kiln-gguf-"));
    await writeFile(join(dir, "m.gguf"), bytes);
    await writeFile(join(dir, "cut.gguf"), bytes.subarray(0, 300));
    expect((await readGgufHeader(join(dir, "m.gguf"))).tensors).toHaveLength(2);
    await expect(readGgufHeader(join(dir, "cut.gguf"))).rejects.toThrow(/truncated/);
  });
});

describe("describeGguf", () => {
  it("derives architecture, parameter count, context length, template and quantization", () => {
    expect(describeGguf(parseGgufHeader(bytes))).toEqual({
      format: "gguf v3", architecture: "llama", parameters: 17, contextLength: 8192, chatTemplate: true, quantization: "Q4_1",
    });
  });

  it("names the dominant tensor type when the file type is absent", () => {
    const header = parseGgufHeader(encodeGguf(metadata.filter((m) => m.key !== "general.file_type"), tensors));
    expect(describeGguf(header).quantization).toBe("F32");
  });
});
