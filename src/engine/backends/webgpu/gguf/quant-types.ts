/**
 * The ggml tensor types the WebGPU backend knows, with their block geometry.
 * Numbers are ggml's on-disk type ids; block sizes follow ggml's `block_*` structs.
 */
import { tensorTypeName } from "../../../../gguf/describe-gguf.js";

/** A ggml tensor type id, as stored in a GGUF tensor description. */
export enum GgmlType {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
}

/** How many weights one block holds and how many bytes it takes. */
export interface BlockInfo {
  /** Weights per block (1 for F32/F16). */
  weights: number;
  /** Bytes per block. */
  bytes: number;
}

const BLOCKS: Record<GgmlType, BlockInfo> = {
  [GgmlType.F32]: { weights: 1, bytes: 4 },
  [GgmlType.F16]: { weights: 1, bytes: 2 },
  [GgmlType.Q4_0]: { weights: 32, bytes: 18 },
  [GgmlType.Q4_1]: { weights: 32, bytes: 20 },
  [GgmlType.Q5_0]: { weights: 32, bytes: 22 },
  [GgmlType.Q5_1]: { weights: 32, bytes: 24 },
  [GgmlType.Q8_0]: { weights: 32, bytes: 34 },
  [GgmlType.Q4_K]: { weights: 256, bytes: 144 },
  [GgmlType.Q5_K]: { weights: 256, bytes: 176 },
  [GgmlType.Q6_K]: { weights: 256, bytes: 210 },
};

/** True when `type` is a ggml type id this backend knows. */
export function isKnownType(type: number): type is GgmlType {
  return Object.hasOwn(BLOCKS, type);
}

/** The block geometry of a type. Throws on a type id this backend does not know. */
export function blockInfo(type: GgmlType): BlockInfo {
  if (!isKnownType(type)) throw new RangeError(`unknown ggml type ${type as number}`);
  return BLOCKS[type];
}

/** The type's ggml name ("Q4_1"), also for types this backend does not run ("Q3_K"). */
export function typeName(type: number): string {
  return isKnownType(type) ? GgmlType[type] : tensorTypeName(type);
}

/** Bytes taken by `count` weights of `type`; `count` must be a whole number of blocks. */
export function byteSize(type: GgmlType, count: number): number {
  const { weights, bytes } = blockInfo(type);
  if (count % weights !== 0) throw new RangeError(`${count} weights are not whole ${typeName(type)} blocks`);
  return (count / weights) * bytes;
}
