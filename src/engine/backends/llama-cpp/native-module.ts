/**
 * kiln's native module (native/*.c, built into build/ by `npm run build`; the relative path is the same from src/
 * and dist/): a persistent thread pool for llama.cpp contexts and decoding on the calling thread (thread-pool.ts),
 * one-call sampling of a decode step's sequences (step-sampler.ts), and copying a sequence's cache by its cells
 * (copy-prefix.ts). Each reaches node-llama-cpp's native objects behind its public classes; where the module is
 * missing or cannot identify a context safely, node-llama-cpp's own behaviour stays.
 */
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import type { LlamaContext, LlamaModel } from "node-llama-cpp";

export interface NativeModule {
  attach(context: object, model: object, nCtx: number, nSeqMax: number, threads: number, poll: number, libllama: string, libggml: string): object | null;
  use(handle: object, threads: number): boolean;
  release(handle: object): boolean;
  interrupt(handle: object, on: boolean): void;
  pause(handle: object): boolean;
  decodeNow(handle: object): number;
  stepContext(context: object, model: object, nCtx: number, nSeqMax: number, libllama: string): object | null;
  sequenceSampler(): object;
  sampleStep(stepContext: object, context: object, batchIndexes: Int32Array, sampling: Float64Array, samplers: object[], inline?: boolean): Promise<Int32Array>;
  readonly maxTopK: number;
  cellCopier(context: object, model: object, nCtx: number, nSeqMax: number, libllama: string): object | null;
  copyCells(copier: object, target: number, source: number): number;
}

let loaded: NativeModule | null | undefined;

/** The compiled native module, or null where it was not built. */
export function loadNativeModule(): NativeModule | null {
  if (loaded !== undefined) return loaded;
  try {
    loaded = createRequire(import.meta.url)("../../../../build/kiln-native.node") as NativeModule;
  } catch {
    loaded = null;
  }
  return loaded;
}

/** The paths of the llama.cpp libraries node-llama-cpp loaded into this process (Linux: from /proc/self/maps). */
export function loadedLibraries(): { libllama: string; libggml: string } | undefined {
  try {
    return librariesIn(readFileSync("/proc/self/maps", "utf8"));
  } catch {
    return undefined;
  }
}

/**
 * libllama and libggml among a process's mapped files: libllama.so or libllama.<version>.so, never
 * libllama-common.so beside it (whose mappings come first in some runs: it exports none of llama.cpp's own API).
 */
export function librariesIn(maps: string): { libllama: string; libggml: string } | undefined {
  const paths = maps.split("\n").map((line) => line.split(/\s+/).at(-1) ?? "");
  const libllama = paths.find((p) => /\/libllama(\.[^/-]*)?\.so$/.test(p));
  const libggml = paths.find((p) => /\/libggml(\.[^/-]*)?\.so$/.test(p));
  return libllama && libggml ? { libllama, libggml } : undefined;
}

/** node-llama-cpp's native objects behind its public classes (internal fields of the pinned 3.x release). */
export interface NativeHandles {
  context: { getContextSize(): number } & object;
  model: object;
}

export function nativeHandles(context: LlamaContext, model: LlamaModel): NativeHandles | undefined {
  const nativeContext = (context as unknown as { _ctx?: { getContextSize?: () => number } })._ctx;
  const nativeModel = (model as unknown as { _model?: object })._model;
  if (!nativeContext || typeof nativeContext.getContextSize !== "function" || !nativeModel) return undefined;
  return { context: nativeContext as NativeHandles["context"], model: nativeModel };
}

/** What kiln's native module opens its handles on: the module, node-llama-cpp's objects and the loaded libraries. */
export interface NativeTarget {
  native: NativeModule;
  handles: NativeHandles;
  libraries: { libllama: string; libggml: string };
  /** The context's cells and sequences, which the native side checks against llama.cpp's own (llama-context.h). */
  cells: number;
  sequences: number;
}

/** The native target of `context` and `model`; undefined where the module, the libraries or the objects are missing. */
export function nativeTarget(context: LlamaContext, model: LlamaModel): NativeTarget | undefined {
  const native = loadNativeModule();
  const libraries = native && loadedLibraries();
  const handles = libraries && nativeHandles(context, model);
  if (!native || !libraries || !handles) return undefined;
  return { native, handles, libraries, cells: handles.context.getContextSize(), sequences: context.totalSequences };
}

/**
 * Wraps a method of one of node-llama-cpp's native objects. The native methods are read-only on the prototype; an own
 * property on the instance shadows whichever method is there, so the wrappers (per-step threads, the step clock, the
 * step interrupter, the step sampler) chain, each calling the one it found.
 */
export function shadowMethod<T extends object, K extends keyof T>(target: T, name: K, value: T[K]): void {
  Object.defineProperty(target, name, { value, configurable: true, writable: true });
}

/** `promise`, with `settled` run once it settles: `finally` without its extra promises, on every decode step. */
export function whenSettled<T>(promise: Promise<T>, settled: () => void): Promise<T> {
  return promise.then((value) => {
    settled();
    return value;
  }, (error: unknown) => {
    settled();
    throw error;
  });
}
