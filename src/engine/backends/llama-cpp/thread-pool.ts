/**
 * A persistent ggml thread pool for a context, a way to interrupt its decode steps, and a way to decode one on the
 * calling thread (native/threadpool.c).
 * node-llama-cpp's prebuilt llama.cpp starts and joins its worker threads inside every decode call; with a pool
 * attached the workers stay up between steps, as in llama.cpp's tools. Where the native module is missing or cannot
 * identify the context safely, nothing changes and `attachThreadPool` returns undefined.
 */
import type { LlamaContext, LlamaModel } from "node-llama-cpp";
import { nativeTarget } from "./native-module.js";

export interface AttachedThreadPool {
  /** Whether a pool was attached (only for more than one thread); interrupt() works either way. */
  pooled: boolean;
  /**
   * Runs the context's next steps on a pool of this many threads (none for one; at most the count attached). Call
   * only between steps (decode-threads.ts does, before each).
   */
  use(threads: number): void;
  /** Stops the pools' threads; call after the context is disposed (which waits for the decode in flight). */
  release(): void;
  /** While on, the context's decode step in flight (or its next) stops at its next graph node and fails. */
  interrupt(on: boolean): void;
  /**
   * Sends the attached pool's polling workers to sleep; ggml wakes them at the next step. Call only while none of the
   * context's steps is in flight (decode-threads.ts pauses an idle context).
   */
  pause(): void;
  /**
   * Decodes the batch node-llama-cpp has built on this thread, in place of its decodeBatch(); returns llama_decode's
   * result (0: done).
   */
  decodeNow(): number;
}

/**
 * llama.cpp's default polling level: between steps a worker spins up to ~6.5M rounds before it sleeps, so a stream's
 * next step finds it running. With workers that slept after every step (level 0), a lone stream's token time p95
 * went from 26 to 33 ms on 2 cores: each step had to wake its worker, and a client process woken by the previous
 * token's event got that core first. A pool is not left polling while its context steps on fewer threads (as when
 * the prefill lane and a stream share 2 cores): each thread count has its own pool, and ggml pauses the one it
 * switches away from (native/threadpool.c).
 */
const POLL = 50;

/** Attaches a pool of `threads` workers (none for one thread) to `context`; undefined when that is not possible here. */
export function attachThreadPool(context: LlamaContext, model: LlamaModel, threads: number): AttachedThreadPool | undefined {
  const target = nativeTarget(context, model);
  if (!target) return undefined;
  const { native, handles, libraries } = target;
  let handle: object | null;
  try {
    handle = native.attach(handles.context, handles.model, target.cells, target.sequences, threads, POLL, libraries.libllama, libraries.libggml);
  } catch {
    return undefined;
  }
  if (!handle) return undefined;
  const attached = handle;
  return {
    pooled: threads > 1,
    use: (count) => void native.use(attached, count),
    release: () => void native.release(attached),
    interrupt: (on) => native.interrupt(attached, on),
    pause: () => void native.pause(attached),
    decodeNow: () => native.decodeNow(attached),
  };
}
