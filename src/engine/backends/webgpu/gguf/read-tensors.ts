/**
 * Reads tensor data out of a GGUF file, one tensor (or a range of its rows) at a time, so loading never holds
 * more than one tensor in memory. The header comes from the shared GGUF reader in models/.
 */
import { open } from "node:fs/promises";
import { EngineError } from "../../../../errors/engine-error.js";
import { readGgufHeader, type GgufHeader, type GgufTensorInfo } from "../../../../gguf/read-gguf-header.js";
import { GgmlType, blockInfo, isKnownType, typeName } from "./quant-types.js";

/** An opened GGUF: its header and its tensors by name. */
export interface GgufTensorFile {
  path: string;
  header: GgufHeader;
  tensors: Map<string, GgufTensorInfo>;
}

/** One tensor's raw bytes, as a 2-D `rows × cols` view (cols = ne[0]; rows = the product of the other dims). */
export interface TensorBytes {
  name: string;
  type: GgmlType;
  /** Rows actually read (all of them unless a range was asked for). */
  rows: number;
  cols: number;
  /** The tensor's full dims, innermost first. */
  dims: number[];
  bytes: Uint8Array;
}

/** Which rows to read: `count` rows from `first`. */
export interface RowRange {
  first: number;
  count: number;
}

/** Reads the header of the GGUF at `path` and indexes its tensors by name. */
export async function openGgufTensors(path: string): Promise<GgufTensorFile> {
  const header = await readGgufHeader(path);
  return { path, header, tensors: new Map(header.tensors.map((t) => [t.name, t])) };
}

/** Reads one tensor's bytes by name, or only some of its rows. Throws not_found for a missing tensor. */
export async function readTensor(file: GgufTensorFile, name: string, range?: RowRange): Promise<TensorBytes> {
  const info = file.tensors.get(name);
  if (!info) throw new EngineError("not_found", `tensor ${name} is not in ${file.path}`, { tensor: name });
  const type = checkedType(info);
  const cols = info.dims[0] ?? 1;
  const allRows = info.dims.slice(1).reduce((a, b) => a * b, 1);
  const { first, count } = range ?? { first: 0, count: allRows };
  if (first < 0 || count < 0 || first + count > allRows) {
    throw new RangeError(`rows ${first}..${first + count} are outside ${name}, which has ${allRows}`);
  }
  const rowBytes = rowByteSize(type, cols);
  const bytes = await readAt(file.path, file.header.dataOffset + info.offset + first * rowBytes, count * rowBytes);
  return { name, type, rows: count, cols, dims: info.dims, bytes };
}

/** Bytes taken by one row of `cols` weights. */
export function rowByteSize(type: GgmlType, cols: number): number {
  const { weights, bytes } = blockInfo(type);
  if (cols % weights !== 0) throw new RangeError(`a ${typeName(type)} row of ${cols} weights is not whole blocks`);
  return (cols / weights) * bytes;
}

function checkedType(info: GgufTensorInfo): GgmlType {
  if (isKnownType(info.type)) return info.type;
  throw new EngineError("invalid_request", `tensor ${info.name} has ggml type ${info.type}, which the webgpu backend cannot read`, {
    tensor: info.name,
    ggmlType: info.type,
  });
}

async function readAt(path: string, position: number, length: number): Promise<Uint8Array> {
  const handle = await open(path, "r");
  try {
    const bytes = new Uint8Array(length);
    const { bytesRead } = await handle.read(bytes, 0, length, position);
    if (bytesRead !== length) throw new EngineError("backend_failure", `${path} ends inside a tensor (wanted ${length} bytes at ${position})`);
    return bytes;
  } finally {
    await handle.close();
  }
}
