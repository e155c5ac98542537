/**
 * Opens llama.cpp through node-llama-cpp and loads one GGUF file where the settings say: the GPU backend ("auto": the
 * best that works, else the CPU; a named one must work here; false: the CPU) and the layers offloaded to it. Never
 * builds or downloads llama.cpp (`build: "never"`): only the prebuilt binaries that ship with the package are used.
 */
import { open, stat } from "node:fs/promises";
import { basename } from "node:path";
import {
  getLlama, getLlamaGpuTypes, GgufInsights, InsufficientMemoryError, Llama, LlamaLogLevel, NoBinaryFoundError, readGgufFileInfo, type LlamaGpuType,
  type LlamaModel,
} from "node-llama-cpp";
import { EngineError } from "../../../errors/engine-error.js";
import { hasGpuDeviceNode, hasVulkanDriver } from "../../../lib/vulkan.js";
import { GgufFormatError, readGgufHeader } from "../../../gguf/read-gguf-header.js";
import type { GpuBackendName, GpuChoice, GpuLayersChoice } from "../../engine-options.js";
import { formatBytes } from "./fit-context.js";
import { lightGgufReads } from "./gguf-reads.js";

/**
 * llama.cpp reports a decode step stopped on purpose (a request abandoned mid-step, step-interrupter.ts: ggml status 1,
 * llama_decode 2) as three errors. Only kiln interrupts steps, and a client going away is not an error.
 */
const INTERRUPTED_STEP = /failed with error 1$|compute status: 1$|failed to decode, ret = 2$/;

function logLlamaCpp(level: LlamaLogLevel, message: string): void {
  if (!INTERRUPTED_STEP.test(message.trim())) Llama.defaultConsoleLogger(level, message);
}

/** Where load warnings go when the engine's settings name no place. */
export function warnOnStderr(message: string): void {
  process.stderr.write(`kiln: warning: ${message}\n`);
}

const GPU_NAMES: Record<GpuBackendName, string> = { cuda: "CUDA", vulkan: "Vulkan", metal: "Metal" };

/**
 * Why node-llama-cpp's Vulkan build would find no GPU here, though it offers that build wherever libvulkan is
 * installed: no Vulkan driver (a server or container without a GPU), or no GPU for a driver to reach (a virtual
 * machine with Mesa's drivers, whose only device is its software renderer, which llama.cpp skips). Trying it there
 * tests a binary (~0.4 s, with a warning printed into every command), or loads the Vulkan build and then the CPU one
 * (about a second more); undefined: Vulkan may work.
 */
function vulkanUnusable(): string | undefined {
  if (process.platform !== "linux") return undefined;
  if (!hasVulkanDriver()) return "a Vulkan loader is installed but no Vulkan driver (no driver manifest in vulkan/icd.d, nor in VK_DRIVER_FILES)";
  if (!hasGpuDeviceNode()) return "no GPU device was found (no /dev/dri/renderD*, /dev/nvidia*, or /dev/dxg), so the only Vulkan devices are software renderers, which llama.cpp does not use";
  return undefined;
}

function autoGpu(): "auto" | { type: "auto"; exclude: LlamaGpuType[] } {
  return vulkanUnusable() ? { type: "auto", exclude: ["vulkan"] } : "auto";
}

/** The GPU backends llama.cpp can use here, best first (false: the CPU): node-llama-cpp's, less a Vulkan with no GPU. */
export async function usableGpuTypes(): Promise<LlamaGpuType[]> {
  return usableOf(await getLlamaGpuTypes("supported"));
}

function usableOf(supported: LlamaGpuType[]): LlamaGpuType[] {
  return vulkanUnusable() ? supported.filter((type) => type !== "vulkan") : supported;
}

/** What node-llama-cpp looks for before it offers a backend (its detectAvailableComputeLayers), for the error. */
const GPU_MISSING: Record<GpuBackendName, string> = {
  cuda: "no NVIDIA driver with the CUDA runtime was found (libnvidia-ml, libcuda, libcudart and libcublas in the library path)",
  vulkan: "no Vulkan loader was found (libvulkan.so.1 in the library path)",
  metal: "llama.cpp's Metal backend runs only on Apple Silicon Macs",
};

/**
 * Opens the llama.cpp bindings. "auto" falls back to the CPU build when no GPU build starts; a named backend that this
 * machine lacks, or whose build does not start, is an error naming what is missing.
 */
export async function openLlama(gpu: GpuChoice = "auto", warn: (message: string) => void = warnOnStderr): Promise<Llama> {
  // maxThreads 0: kiln's core budget alone decides each context's threads (core-budget.ts). node-llama-cpp's own
  // splitter (4 threads on a 2-core CPU) counted every context at the threads it was created with, so while a model
  // and its prefill lane decoded, a second model's prompt step made the first model's next step wait for it: its
  // stream stopped for 420–470 ms, against 32–91 ms without the splitter (bench/results/2026-11-27-vm-thread-splitter.md).
  const options = { build: "never", logLevel: LlamaLogLevel.error, logger: logLlamaCpp, maxThreads: 0 } as const;
  // Loads parse GGUF headers in JavaScript; they must not stall the streams of models already serving.
  await lightGgufReads();
  if (gpu === false) return getLlama({ ...options, gpu: false });
  if (gpu === "auto" || gpu === true) {
    let llama: Llama;
    try {
      llama = await getLlama({ ...options, gpu: autoGpu() });
    } catch (error) {
      warn(`no GPU build of llama.cpp started (${messageOf(error)}); running on the CPU`);
      return getLlama({ ...options, gpu: false });
    }
    if (llama.gpu === false || await hasGpuDevice(llama)) return llama;
    // A GPU build that finds no GPU all the same (a GPU whose Vulkan driver is missing, beside a software one, which
    // llama.cpp skips): the CPU build, whose contexts kiln runs with its own threads.
    await llama.dispose();
    return getLlama({ ...options, gpu: false });
  }
  await checkGpuAvailable(gpu);
  let llama: Llama;
  try {
    llama = await getLlama({ ...options, gpu });
  } catch (error) {
    // node-llama-cpp has printed why; its error itself says only "NoBinaryFoundError" when no prebuilt binary loads.
    const cause = error instanceof NoBinaryFoundError || messageOf(error) === "NoBinaryFoundError"
      ? `no prebuilt ${GPU_NAMES[gpu]} binary of node-llama-cpp loads here (its optional package @node-llama-cpp/<platform>-${gpu} is missing, or does not run on this system)`
      : messageOf(error);
    throw new EngineError("backend_failure", `${GPU_NAMES[gpu]}: llama.cpp's ${GPU_NAMES[gpu]} build did not start on this machine: ${cause}`, { gpu }, { cause: error });
  }
  if (await hasGpuDevice(llama)) return llama;
  await llama.dispose();
  throw new EngineError(
    "invalid_request",
    `${GPU_NAMES[gpu]} is not available on this machine: llama.cpp's ${GPU_NAMES[gpu]} build started but found no GPU device (it skips software devices); llama.cpp can use the CPU here`,
    { param: "gpu", gpu },
  );
}

/** Whether the opened GPU build sees a device with memory (a GPU, or Apple's unified memory). */
async function hasGpuDevice(llama: Llama): Promise<boolean> {
  const vram = await llama.getVramState().catch(() => ({ total: 0 }));
  return vram.total > 0;
}

/** A named GPU backend must be one node-llama-cpp finds usable here. */
async function checkGpuAvailable(gpu: GpuBackendName): Promise<void> {
  const supported = await getLlamaGpuTypes("supported");
  const usable = usableOf(supported);
  if (usable.includes(gpu)) return;
  // node-llama-cpp would offer Vulkan, and find no GPU.
  const vulkanReason = gpu === "vulkan" && supported.includes(gpu) ? vulkanUnusable() : undefined;
  const onPlatform = (await getLlamaGpuTypes("allValid")).includes(gpu);
  const where = onPlatform ? "this machine" : `${process.platform} ${process.arch}`;
  throw new EngineError(
    "invalid_request",
    `${GPU_NAMES[gpu]} is not available on ${where}: ${vulkanReason ?? GPU_MISSING[gpu]}; llama.cpp can use ${describeUsable(usable)} here`,
    { param: "gpu", gpu },
  );
}

function describeUsable(types: LlamaGpuType[]): string {
  const names = types.map((type) => (type === false ? "the CPU" : GPU_NAMES[type]));
  return names.length > 1 ? `${names.slice(0, -1).join(", ")} or ${names.at(-1)}` : names[0] ?? "the CPU";
}

/** "vulkan (NVIDIA H200)", or "the CPU". */
export async function describeGpu(llama: Llama): Promise<string> {
  if (llama.gpu === false) return "the CPU";
  const devices = await llama.getGpuDeviceNames().catch(() => [] as string[]);
  return devices.length ? `${llama.gpu} (${devices.join(", ")})` : llama.gpu;
}

/** How to load a GGUF. */
export interface GgufLoadOptions {
  /** Layers to offload (default "auto"). */
  gpuLayers?: GpuLayersChoice;
  /** Tokens of KV cache (per sequence × sequences) that "auto" leaves VRAM for beside the layers it offloads. */
  fitTokens: number;
  warn(message: string): void;
}

/**
 * Loads a GGUF file. With "auto" layers, a GPU load failure (out of VRAM, unsupported kernel) is retried on the CPU
 * and a partial offload is warned about; "max" or a count that does not fit is an error naming the VRAM needed and
 * free; any other failure is a `backend_failure` naming the file and the cause.
 */
export async function loadGgufModel(llama: Llama, path: string, options: GgufLoadOptions = { fitTokens: 4096, warn: warnOnStderr }): Promise<LlamaModel> {
  await checkGgufFile(path);
  const layers = options.gpuLayers ?? "auto";
  const name = basename(path);
  if (llama.gpu === false) {
    if (layers !== "auto" && layers !== 0) options.warn(`${name}: no GPU in use, so all its layers run on the CPU (${layers} asked for on the GPU)`);
    return loadOrFail(llama, path, 0);
  }
  if (layers !== "auto") {
    try {
      return await llama.loadModel({ modelPath: path, gpuLayers: layers });
    } catch (error) {
      if (error instanceof InsufficientMemoryError) throw await layersShortfall(llama, path, layers, error);
      throw loadFailure(path, error);
    }
  }
  let model: LlamaModel;
  try {
    model = await llama.loadModel({ modelPath: path, gpuLayers: { fitContext: { contextSize: options.fitTokens } } }).catch((error: unknown) => {
      // No layers leave room for a context that large: offload what fits without it, and let the context's own memory
      // check name what it needs.
      if (error instanceof InsufficientMemoryError) return llama.loadModel({ modelPath: path, gpuLayers: "auto" });
      throw error;
    });
  } catch (error) {
    options.warn(`${name}: loading it on ${await describeGpu(llama)} failed (${messageOf(error)}); loading it on the CPU instead`);
    return loadOrFail(llama, path, 0);
  }
  const total = model.fileInsights.totalLayers;
  if (model.gpuLayers < total) {
    const vram = await llama.getVramState();
    options.warn(`${name}: ${model.gpuLayers}/${total} layers fit on ${await describeGpu(llama)} (${formatBytes(vram.free)} of ${formatBytes(vram.total)} VRAM free), the other ${total - model.gpuLayers} run on the CPU`);
  }
  return model;
}

async function loadOrFail(llama: Llama, path: string, gpuLayers: number): Promise<LlamaModel> {
  try {
    return await llama.loadModel({ modelPath: path, gpuLayers });
  } catch (error) {
    throw loadFailure(path, error);
  }
}

/** The one-line error for layers that do not fit in VRAM: what they need and what is free. */
async function layersShortfall(llama: Llama, path: string, layers: "max" | number, error: unknown): Promise<EngineError> {
  const insights = await GgufInsights.from(await readGgufFileInfo(path), llama);
  const total = insights.totalLayers;
  const count = layers === "max" ? total : Math.min(layers, total);
  const need = await insights.estimateModelResourceRequirementsV2({ gpuLayers: count });
  const vram = await llama.getVramState();
  const short = need.gpuVram > vram.free ? "" : ", too little for a context beside them";
  return new EngineError(
    "backend_failure",
    `cannot load ${basename(path)} with ${count}/${total} layers on ${await describeGpu(llama)}: they need ${formatBytes(need.gpuVram)} of VRAM, ${formatBytes(vram.free)} free (of ${formatBytes(vram.total)})${short}; offload fewer layers, or "auto" to offload what fits`,
    { path },
    { cause: error },
  );
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** Reads the first bytes: a file that is missing or lacks the GGUF magic fails before the native loader sees it. */
async function checkGgufFile(path: string): Promise<void> {
  const info = await stat(path).catch(() => undefined);
  if (!info?.isFile()) throw new EngineError("backend_failure", `cannot load model ${basename(path)}: no such file: ${path}`, { path });
  const handle = await open(path, "r");
  try {
    const magic = Buffer.alloc(4);
    await handle.read(magic, 0, 4, 0);
    if (magic.toString("latin1") !== "GGUF") {
      throw new EngineError("backend_failure", `cannot load model ${basename(path)}: not a GGUF file (${path})`, { path });
    }
  } finally {
    await handle.close();
  }
  // A damaged file is refused here, by a reader that stops at the file's end, before llama.cpp's reader sees it: a
  // damaged header was seen to keep that reader (and the event loop) busy while its memory grew by gigabytes.
  await readGgufHeader(path).catch((error: unknown) => {
    if (!(error instanceof GgufFormatError)) throw error;
    throw new EngineError("backend_failure", `cannot load model ${basename(path)}: not a valid GGUF file: ${error.message} (${path})`, { path }, { cause: error });
  });
}

function loadFailure(path: string, error: unknown): EngineError {
  const cause = error instanceof Error ? error.message : String(error);
  return new EngineError("backend_failure", `cannot load model ${basename(path)}: ${cause} (${path})`, { path }, { cause: error });
}
