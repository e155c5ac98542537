/**
 * The facts about a model that `kiln models show` prints, read from its GGUF header: architecture, parameter
 * count (summed over the tensor shapes), training context length, chat template presence, quantization.
 */
import type { GgufHeader, GgufValue } from "./read-gguf-header.js";

/** What the store records about a model file's contents. */
export interface GgufFacts {
  /** `gguf v3`, say. */
  format: string;
  /** general.architecture, e.g. "llama". */
  architecture: string | null;
  /** Total elements over all tensors. */
  parameters: number;
  /** The context length the model was trained for (`<arch>.context_length`). */
  contextLength: number | null;
  /** Whether the file carries a chat template (tokenizer.chat_template). */
  chatTemplate: boolean;
  /** The file type (general.file_type) by name, else the type most of the weights use, e.g. "Q4_1". */
  quantization: string | null;
}

/** llama.cpp's llama_ftype numbers (general.file_type). */
const FILE_TYPES: Record<number, string> = {
  0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 7: "Q8_0", 8: "Q5_0", 9: "Q5_1", 10: "Q2_K", 11: "Q3_K_S",
  12: "Q3_K_M", 13: "Q3_K_L", 14: "Q4_K_S", 15: "Q4_K_M", 16: "Q5_K_S", 17: "Q5_K_M", 18: "Q6_K",
  19: "IQ2_XXS", 20: "IQ2_XS", 21: "Q2_K_S", 22: "IQ3_XS", 23: "IQ3_XXS", 24: "IQ1_S", 25: "IQ4_NL",
  26: "IQ3_S", 27: "IQ3_M", 28: "IQ2_S", 29: "IQ2_M", 30: "IQ4_XS", 31: "IQ1_M", 32: "BF16", 36: "TQ1_0", 37: "TQ2_0",
};

/** ggml's tensor type numbers. */
const TENSOR_TYPES: Record<number, string> = {
  0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 6: "Q5_0", 7: "Q5_1", 8: "Q8_0", 9: "Q8_1", 10: "Q2_K", 11: "Q3_K",
  12: "Q4_K", 13: "Q5_K", 14: "Q6_K", 15: "Q8_K", 16: "IQ2_XXS", 17: "IQ2_XS", 18: "IQ3_XXS", 19: "IQ1_S",
  20: "IQ4_NL", 21: "IQ3_S", 22: "IQ2_S", 23: "IQ4_XS", 24: "I8", 25: "I16", 26: "I32", 27: "I64", 28: "F64",
  29: "IQ1_M", 30: "BF16", 34: "TQ1_0", 35: "TQ2_0",
};

/** ggml's name of a tensor type id ("Q3_K"), or "type N" for an id it does not know. */
export function tensorTypeName(type: number): string {
  return TENSOR_TYPES[type] ?? `type ${type}`;
}

/** Reads the facts the store records from a parsed header. */
export function describeGguf(header: GgufHeader): GgufFacts {
  const architecture = stringOf(header.metadata["general.architecture"]);
  const elements = header.tensors.map((t) => t.dims.reduce((a, b) => a * b, 1));
  return {
    format: `gguf v${header.version}`,
    architecture,
    parameters: elements.reduce((a, b) => a + b, 0),
    contextLength: architecture ? numberOf(header.metadata[`${architecture}.context_length`]) : null,
    chatTemplate: typeof header.metadata["tokenizer.chat_template"] === "string",
    quantization: quantizationOf(header, elements),
  };
}

function quantizationOf(header: GgufHeader, elements: number[]): string | null {
  const fileType = numberOf(header.metadata["general.file_type"]);
  if (fileType !== null && FILE_TYPES[fileType]) return FILE_TYPES[fileType];
  // No file type: name the tensor type that holds the most weights.
  const byType = new Map<number, number>();
  header.tensors.forEach((t, i) => byType.set(t.type, (byType.get(t.type) ?? 0) + elements[i]!));
  const [top] = [...byType.entries()].sort((a, b) => b[1] - a[1]);
  return top ? tensorTypeName(top[0]) : null;
}

function stringOf(value: GgufValue | undefined): string | null {
  return typeof value === "string" ? value : null;
}

function numberOf(value: GgufValue | undefined): number | null {
  return typeof value === "number" ? value : null;
}
