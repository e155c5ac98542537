/**
 * A persistent ggml thread pool for a context, and a way to interrupt its decode steps (native/threadpool.c, built
 * into build/ by `npm run build`; the relative path is the same from src/ and dist/). node-llama-cpp's prebuilt
 * llama.cpp starts and joins its worker threads inside every decode call; with a pool attached the workers stay up
 * between steps, as in llama.cpp's tools. Where the module is missing or cannot identify the context safely, nothing
 * changes and `attachThreadPool` returns undefined.
 */
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import type { LlamaContext, LlamaModel } from "node-llama-cpp";

export interface ThreadPoolModule {
  attach(context: object, model: object, nCtx: number, nSeqMax: number, threads: number, poll: number, libllama: string, libggml: string): object | null;
  release(handle: object): boolean;
  interrupt(handle: object, on: boolean): void;
}

export interface AttachedThreadPool {
  /** Whether a pool was attached (only for more than one thread); interrupt() works either way. */
  pooled: boolean;
  /** Stops the pool's threads; call after the context is disposed (which waits for the decode in flight). */
  release(): void;
  /** While on, the context's decode step in flight (or its next) stops at its next graph node and fails. */
  interrupt(on: boolean): void;
}

/**
 * Idle workers sleep at once instead of polling (llama.cpp's default level, 50, spins up to ~6.5M rounds after each
 * graph). A worker left out of a step that runs on fewer threads than its pool kept polling through every step of
 * its context: with the prefill lane and the main context each stepping on one of 2 cores, the two idle workers took
 * the cores from the working threads and a stream's token time went from 33 ms to 65–70 ms in one step of three.
 * Waking a sleeping worker costs microseconds per step.
 */
const POLL = 0;

let loaded: ThreadPoolModule | null | undefined;

/** The compiled native module, or null where it was not built. */
export function loadThreadPoolModule(): ThreadPoolModule | null {
  if (loaded !== undefined) return loaded;
  try {
    loaded = createRequire(import.meta.url)("../../../../build/threadpool.node") as ThreadPoolModule;
  } catch {
    loaded = null;
  }
  return loaded;
}

/** The paths of the llama.cpp libraries node-llama-cpp loaded into this process (Linux: from /proc/self/maps). */
export function loadedLibraries(): { libllama: string; libggml: string } | undefined {
  let maps: string;
  try {
    maps = readFileSync("/proc/self/maps", "utf8");
  } catch {
    return undefined;
  }
  const paths = maps.split("\n").map((line) => line.split(/\s+/).at(-1) ?? "");
  const libllama = paths.find((p) => /\/libllama[^/]*\.so/.test(p));
  const libggml = paths.find((p) => /\/libggml\.[^/]*so/.test(p));
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

/** Attaches a pool of `threads` workers (none for one thread) to `context`; undefined when that is not possible here. */
export function attachThreadPool(context: LlamaContext, model: LlamaModel, threads: number): AttachedThreadPool | undefined {
  const native = loadThreadPoolModule();
  const libraries = native && loadedLibraries();
  const handles = libraries && nativeHandles(context, model);
  if (!native || !libraries || !handles) return undefined;
  let handle: object | null;
  try {
    handle = native.attach(handles.context, handles.model, handles.context.getContextSize(), context.totalSequences, threads, POLL,
      libraries.libllama, libraries.libggml);
  } catch {
    return undefined;
  }
  if (!handle) return undefined;
  const attached = handle;
  return { pooled: threads > 1, release: () => void native.release(attached), interrupt: (on) => native.interrupt(attached, on) };
}
