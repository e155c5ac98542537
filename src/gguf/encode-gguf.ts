/**
 * A minimal GGUF writer (version 3), the inverse of read-gguf-header.ts. It exists so tests can build small, deterministic
 * model files instead of committing binaries. Tensors are F32 arrays, or bytes already encoded in a ggml type.
 */
import { GgufType } from "./read-gguf-header.js";

/** One metadata entry with its on-disk type; arrays name their item type. */
export type GgufEntry =
  | { key: string; type: Exclude<GgufType, GgufType.ARRAY>; value: string | number | boolean }
  | { key: string; type: GgufType.ARRAY; itemType: Exclude<GgufType, GgufType.ARRAY>; value: Array<string | number | boolean> };

/** An F32 tensor: dimensions innermost first, data in that order. */
export interface GgufTensorInput {
  name: string;
  dims: number[];
  data: Float32Array;
}

/** A tensor whose bytes are already encoded in ggml type `type` (a ggml type id: 8 = Q8_0, …). */
export interface GgufEncodedTensorInput {
  name: string;
  dims: number[];
  type: number;
  bytes: Uint8Array;
}

const ALIGNMENT = 32;
const F32 = 0;

/** Encodes a complete GGUF v3 file. */
export function encodeGguf(metadata: GgufEntry[], tensors: Array<GgufTensorInput | GgufEncodedTensorInput>): Buffer {
  const parts: Buffer[] = [Buffer.from("GGUF", "latin1"), u32(3), u64(tensors.length), u64(metadata.length)];
  for (const entry of metadata) {
    parts.push(str(entry.key), u32(entry.type));
    if (entry.type === GgufType.ARRAY) {
      parts.push(u32(entry.itemType), u64(entry.value.length), ...entry.value.map((v) => scalar(entry.itemType, v)));
    } else {
      parts.push(scalar(entry.type, entry.value));
    }
  }
  const payloads = tensors.map(payloadOf);
  let offset = 0;
  for (const [i, tensor] of tensors.entries()) {
    const { type, data } = payloads[i]!;
    parts.push(str(tensor.name), u32(tensor.dims.length), ...tensor.dims.map(u64), u32(type), u64(offset));
    offset = alignUp(offset + data.length);
  }
  const header = Buffer.concat(parts);
  const out: Buffer[] = [header, Buffer.alloc(alignUp(header.length) - header.length)];
  for (const { data } of payloads) out.push(data, Buffer.alloc(alignUp(data.length) - data.length));
  return Buffer.concat(out);
}

function payloadOf(tensor: GgufTensorInput | GgufEncodedTensorInput): { type: number; data: Buffer } {
  if ("bytes" in tensor) return { type: tensor.type, data: Buffer.from(tensor.bytes.buffer, tensor.bytes.byteOffset, tensor.bytes.byteLength) };
  return { type: F32, data: Buffer.from(tensor.data.buffer, tensor.data.byteOffset, tensor.data.byteLength) };
}

function alignUp(n: number): number {
  return Math.ceil(n / ALIGNMENT) * ALIGNMENT;
}

function u32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(n);
  return b;
}

function u64(n: number): Buffer {
  const b = Buffer.alloc(8);
  b.writeBigUInt64LE(BigInt(n));
  return b;
}

function str(s: string): Buffer {
  const bytes = Buffer.from(s, "utf8");
  return Buffer.concat([u64(bytes.length), bytes]);
}

function scalar(type: GgufType, value: string | number | boolean): Buffer {
  const b = Buffer.alloc(8);
  const n = Number(value);
  switch (type) {
    case GgufType.STRING: return str(String(value));
    case GgufType.BOOL: return Buffer.from([value ? 1 : 0]);
    case GgufType.UINT8: b.writeUInt8(n); return b.subarray(0, 1);
    case GgufType.INT8: b.writeInt8(n); return b.subarray(0, 1);
    case GgufType.UINT16: b.writeUInt16LE(n); return b.subarray(0, 2);
    case GgufType.INT16: b.writeInt16LE(n); return b.subarray(0, 2);
    case GgufType.UINT32: b.writeUInt32LE(n); return b.subarray(0, 4);
    case GgufType.INT32: b.writeInt32LE(n); return b.subarray(0, 4);
    case GgufType.FLOAT32: b.writeFloatLE(n); return b.subarray(0, 4);
    case GgufType.UINT64: b.writeBigUInt64LE(BigInt(n)); return b;
    case GgufType.INT64: b.writeBigInt64LE(BigInt(n)); return b;
    case GgufType.FLOAT64: b.writeDoubleLE(n); return b;
    default: throw new Error(`cannot write GGUF type ${type}`);
  }
}
