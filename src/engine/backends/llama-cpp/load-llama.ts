/**
 * Opens llama.cpp through node-llama-cpp and loads one GGUF file, preferring a GPU and falling back to the CPU
 * cleanly. Never builds or downloads llama.cpp (`build: "never"`): only the prebuilt binaries that ship with the
 * package are used.
 */
import { open, stat } from "node:fs/promises";
import { basename } from "node:path";
import { getLlama, Llama, LlamaLogLevel, type LlamaModel } from "node-llama-cpp";
import { EngineError } from "../../../errors/engine-error.js";
import type { GpuChoice } from "../../engine-options.js";

/**
 * llama.cpp reports a decode step stopped on purpose (a request abandoned mid-step, step-interrupter.ts: ggml status 1,
 * llama_decode 2) as three errors. Only kiln interrupts steps, and a client going away is not an error.
 */
const INTERRUPTED_STEP = /failed with error 1$|compute status: 1$|failed to decode, ret = 2$/;

function logLlamaCpp(level: LlamaLogLevel, message: string): void {
  if (!INTERRUPTED_STEP.test(message.trim())) Llama.defaultConsoleLogger(level, message);
}

/** Opens the llama.cpp bindings; a failing GPU initialisation falls back to the CPU build. */
export async function openLlama(gpu: GpuChoice = "auto"): Promise<Llama> {
  const options = { build: "never", logLevel: LlamaLogLevel.error, logger: logLlamaCpp } as const;
  if (gpu === false) return getLlama({ ...options, gpu: false });
  try {
    return await getLlama({ ...options, gpu: "auto" });
  } catch {
    return getLlama({ ...options, gpu: false });
  }
}

/**
 * Loads a GGUF file. A GPU load failure (out of VRAM, unsupported kernel) is retried on the CPU; any other
 * failure becomes a `backend_failure` naming the file and the cause.
 */
export async function loadGgufModel(llama: Llama, path: string): Promise<LlamaModel> {
  await checkGgufFile(path);
  try {
    return await llama.loadModel({ modelPath: path });
  } catch (error) {
    if (llama.gpu === false) throw loadFailure(path, error);
    try {
      return await llama.loadModel({ modelPath: path, gpuLayers: 0 });
    } catch (cpuError) {
      throw loadFailure(path, cpuError);
    }
  }
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
}

function loadFailure(path: string, error: unknown): EngineError {
  const cause = error instanceof Error ? error.message : String(error);
  return new EngineError("backend_failure", `cannot load model ${basename(path)}: ${cause} (${path})`, { path }, { cause: error });
}
