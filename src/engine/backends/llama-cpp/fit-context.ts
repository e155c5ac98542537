/**
 * Memory for llama.cpp models: the context kiln picks when none is asked for, and the one-line messages that name
 * the memory needed and the memory free when a context does not fit. The figures are node-llama-cpp's estimates
 * (GgufInsights.estimateContextResourceRequirementsV2), the same it checks before it allocates a context.
 */
import { InsufficientMemoryError, readGgufFileInfo, type GgufFileInfo, type Llama, type LlamaModel } from "node-llama-cpp";
import { EngineError } from "../../../errors/engine-error.js";

/** A default context is never smaller than this per sequence (or than the train context, when that is smaller). */
export const MIN_DEFAULT_CONTEXT = 2048;

/**
 * With no context asked for, "auto" GPU layers leave VRAM for this many tokens per sequence: layers first (a model
 * wholly on the GPU beats a longer context), then the context takes what VRAM is left.
 */
export const DEFAULT_FIT_CONTEXT = 8192;

/** A default context below the train context is a multiple of this. */
const CONTEXT_STEP = 1024;

/**
 * On the CPU a default context holds at most this many tokens per sequence, and its sequences (with the prefill
 * lane's context) take at most CPU_RAM_SHARE of the free RAM. kiln allocates contextSize × sequences KV cells at load
 * and llama.cpp clears them, so the whole cache is resident from the start whether or not a request ever fills it;
 * a CPU server shares the machine's RAM with its clients (a coding agent, an editor; the test suite runs many models
 * at once on a 24 GB machine), and on the CPU a prompt of 32k tokens already takes minutes to read. A larger context
 * is one --ctx-size away.
 */
export const CPU_DEFAULT_CONTEXT_CAP = 32_768;
const CPU_RAM_SHARE = 0.25;

/** Why a context has its size: asked for, the model's train context, the CPU cap, what fits in memory, or what the caller needs. */
export type ContextSource = "asked" | "train" | "cpu-cap" | "memory" | "needed";

export interface ContextChoice {
  /** Tokens per sequence. */
  size: number;
  source: ContextSource;
}

/** The contexts a model holds: the main one's sequences and, on the CPU, the prefill lane's one-sequence context. */
export interface ContextShape {
  sequences: number;
  lane: boolean;
  /** KV cells (tokens × sequences) the main context may hold at most (kvCellLimit). */
  maxCells?: number;
  /** Tokens per sequence the caller can need at most (a one-shot reply: its prompt and its reply's limit). */
  atMost?: number;
}

/** Bytes each memory may take. */
interface MemoryBudget {
  ram: number;
  vram: number;
}

/**
 * The largest context per sequence, up to the model's train context (on the CPU, up to CPU_DEFAULT_CONTEXT_CAP),
 * whose KV cache for every sequence fits the memory available where it goes: VRAM less node-llama-cpp's padding when
 * layers are offloaded, a share of the free RAM on the CPU. Below the cap it is a multiple of 1,024, and never below
 * MIN_DEFAULT_CONTEXT (or the train context): a floor that does not fit is left for the context's own memory check to
 * refuse, with the figures.
 */
export async function chooseContextSize(llama: Llama, model: LlamaModel, shape: ContextShape): Promise<ContextChoice> {
  const train = model.trainContextSize;
  const onGpu = model.gpuLayers > 0;
  const cellCap = Math.floor((shape.maxCells ?? Number.POSITIVE_INFINITY) / shape.sequences / LLAMA_CONTEXT_PAD) * LLAMA_CONTEXT_PAD;
  const needCap = shape.atMost === undefined ? Number.POSITIVE_INFINITY : Math.ceil(shape.atMost / LLAMA_CONTEXT_PAD) * LLAMA_CONTEXT_PAD;
  const cap = Math.min(onGpu ? train : Math.min(train, CPU_DEFAULT_CONTEXT_CAP), cellCap, needCap);
  const budget = await memoryBudget(llama, onGpu);
  const fits = async (size: number): Promise<boolean> => {
    const need = await contextNeeds(model, size, shape);
    return need.cpuRam <= budget.ram && need.gpuVram <= budget.vram;
  };
  const size = await largestFitting(Math.min(train, MIN_DEFAULT_CONTEXT), cap, fits);
  if (cap === needCap && size === cap && cap < train) return { size, source: "needed" };
  if (size < cap || cap === cellCap) return { size, source: "memory" };
  return { size, source: cap < train ? "cpu-cap" : "train" };
}

/**
 * The largest size in [floor, cap] that `fits` accepts, trying `cap` itself and then multiples of CONTEXT_STEP below
 * it (fitting is monotonic: a smaller context needs less); `floor` when none does.
 */
export async function largestFitting(floor: number, cap: number, fits: (size: number) => Promise<boolean>): Promise<number> {
  if (cap <= floor || await fits(cap)) return cap;
  let low = Math.ceil(floor / CONTEXT_STEP);
  let high = Math.floor((cap - 1) / CONTEXT_STEP);
  let best = floor;
  while (low <= high) {
    const middle = Math.floor((low + high) / 2);
    if (await fits(middle * CONTEXT_STEP)) {
      best = Math.max(best, middle * CONTEXT_STEP);
      low = middle + 1;
    } else {
      high = middle - 1;
    }
  }
  return best;
}

/** What the contexts of this shape need, RAM and VRAM, by node-llama-cpp's estimate. */
async function contextNeeds(model: LlamaModel, size: number, shape: ContextShape): Promise<{ cpuRam: number; gpuVram: number }> {
  const estimate = (sequences: number) =>
    model.fileInsights.estimateContextResourceRequirementsV2({ contextSize: size, sequences, modelGpuLayers: model.gpuLayers });
  const main = await estimate(shape.sequences);
  if (!shape.lane) return main;
  const lane = await estimate(1);
  return { cpuRam: main.cpuRam + lane.cpuRam, gpuVram: main.gpuVram + lane.gpuVram };
}

async function memoryBudget(llama: Llama, onGpu: boolean): Promise<MemoryBudget> {
  const ram = await llama.getRamState();
  const vram = llama.gpu === false ? undefined : await llama.getVramState();
  const freeVram = vram ? Math.max(0, vram.free - llama.vramPaddingSize) : Number.POSITIVE_INFINITY;
  if (!onGpu) return { ram: ram.free * CPU_RAM_SHARE, vram: freeVram };
  return { ram: Math.max(0, ram.free - llama.ramPaddingSize), vram: freeVram };
}

/**
 * Why a context of `size` tokens × `sequences` does not fit, for an error: "needs 91.0 GiB of RAM, 16.4 GiB free (of
 * 23.5 GiB)", naming VRAM when that is what runs short.
 */
export async function describeShortfall(llama: Llama, model: LlamaModel, size: number, sequences: number): Promise<string> {
  const need = await model.fileInsights.estimateContextResourceRequirementsV2({ contextSize: size, sequences, modelGpuLayers: model.gpuLayers });
  if (llama.gpu !== false && need.gpuVram > 0) {
    const vram = await llama.getVramState();
    if (need.gpuVram > vram.free) return `needs ${formatBytes(need.gpuVram)} of VRAM, ${formatBytes(vram.free)} free (of ${formatBytes(vram.total)})`;
  }
  const ram = await llama.getRamState();
  return `needs ${formatBytes(need.cpuRam)} of RAM, ${formatBytes(ram.free)} free (of ${formatBytes(ram.total)})`;
}

/** llama.cpp sizes each sequence's KV cache in multiples of this many tokens. */
const LLAMA_CONTEXT_PAD = 256;

/**
 * llama.cpp's Vulkan backend keeps each layer's K cache and V cache in one buffer each, and a tensor of 4 GiB or more
 * aborts the whole process (ggml-backend.cpp: "pre-allocated tensor (cache_k_l0) in a buffer (Vulkan0) that cannot run
 * the operation"), in node-llama-cpp's memory estimate as much as in the context itself, before any memory check can
 * refuse it: seen on an H200 with Qwen2.5-Coder-1.5B (a 256-wide K cache) at 8M cells, while 7.3M cells were refused
 * cleanly for want of VRAM.
 */
const VULKAN_MAX_KV_TENSOR = 4 * 1024 ** 3;

/** A model's KV cache per cell and layer (F16, as kiln's contexts use), from its GGUF metadata. */
export interface KvShape {
  layers: number;
  keyBytes: number;
  valueBytes: number;
}

export function kvShapeOf(info: GgufFileInfo): KvShape {
  const meta = info.architectureMetadata as {
    block_count?: number; embedding_length?: number;
    attention?: { head_count?: number | number[]; head_count_kv?: number | number[]; key_length?: number; value_length?: number };
  };
  const widest = (value: number | number[] | undefined) => (Array.isArray(value) ? Math.max(0, ...value) : value ?? 0);
  const heads = widest(meta.attention?.head_count) || 1;
  const kvHeads = widest(meta.attention?.head_count_kv) || heads;
  const headSize = (meta.embedding_length ?? 0) / heads;
  return {
    layers: meta.block_count ?? 0,
    keyBytes: kvHeads * (meta.attention?.key_length ?? headSize) * 2,
    valueBytes: kvHeads * (meta.attention?.value_length ?? headSize) * 2,
  };
}

/** The most KV cells (tokens × sequences) one context of the model may hold with these bindings, and why. */
export interface CellLimit {
  cells: number;
  shape?: KvShape;
}

/** On Vulkan, the cells below VULKAN_MAX_KV_TENSOR per layer's K or V cache; elsewhere no limit. */
export async function kvCellLimit(llama: Llama, path: string): Promise<CellLimit> {
  if (llama.gpu !== "vulkan") return { cells: Number.POSITIVE_INFINITY };
  const shape = kvShapeOf(await readGgufFileInfo(path, { readTensorInfo: false, logWarnings: false }));
  const widest = Math.max(shape.keyBytes, shape.valueBytes);
  return { cells: widest > 0 ? Math.floor((VULKAN_MAX_KV_TENSOR - 1) / widest) : Number.POSITIVE_INFINITY, shape };
}

/**
 * Refuses, before anything is loaded, a context the Vulkan backend would abort on: one line naming the VRAM its KV
 * cache needs, or the per-layer size beyond what a Vulkan buffer holds.
 */
export async function checkCellLimit(llama: Llama, limit: CellLimit, what: { id: string; path: string; size: number; sequences: number }): Promise<void> {
  const cells = Math.ceil(what.size / LLAMA_CONTEXT_PAD) * LLAMA_CONTEXT_PAD * what.sequences;
  if (cells <= limit.cells || !limit.shape) return;
  const { layers, keyBytes, valueBytes } = limit.shape;
  const vram = await llama.getVramState();
  const kv = cells * (keyBytes + valueBytes) * layers;
  const reason = kv > vram.free
    ? `needs ${formatBytes(kv)} of VRAM for its KV cache alone, ${formatBytes(vram.free)} free (of ${formatBytes(vram.total)})`
    : `would put ${formatBytes(cells * Math.max(keyBytes, valueBytes))} in each layer's KV cache, beyond the 4 GiB a Vulkan buffer holds`;
  throw new EngineError(
    "backend_failure",
    `cannot create a context of ${what.sequences} × ${what.size} tokens for ${what.id}: it ${reason}; ask for a smaller context or fewer parallel sequences`,
    { path: what.path, contextSize: what.size, sequences: what.sequences },
  );
}

/** What a failed context creation becomes: with too little memory, one line naming the memory needed and free. */
export async function contextFailure(llama: Llama, model: LlamaModel, what: { id: string; path: string; size: number; sequences: number }, error: unknown): Promise<EngineError> {
  const context = `a context of ${what.sequences} × ${what.size} tokens`;
  if (error instanceof EngineError) return error;
  if (error instanceof InsufficientMemoryError) {
    const shortfall = await describeShortfall(llama, model, what.size, what.sequences).catch(() => `does not fit (${error.message})`);
    return new EngineError(
      "backend_failure",
      `cannot create ${context} for ${what.id}: it ${shortfall}; ask for a smaller context or fewer parallel sequences`,
      { path: what.path, contextSize: what.size, sequences: what.sequences },
      { cause: error },
    );
  }
  const cause = error instanceof Error ? error.message : String(error);
  return new EngineError("backend_failure", `cannot create ${context} for ${what.path}: ${cause}`, { path: what.path }, { cause: error });
}

/** 1.2 GiB, 858 MiB, 23.3 TiB. */
export function formatBytes(bytes: number): string {
  if (bytes >= 1024 ** 4) return `${(bytes / 1024 ** 4).toFixed(1)} TiB`;
  if (bytes >= 1024 ** 3) return `${(bytes / 1024 ** 3).toFixed(1)} GiB`;
  return `${Math.round(bytes / 1024 ** 2)} MiB`;
}
