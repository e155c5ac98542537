/** Watches a node-llama-cpp context's native batches (internal methods of the pinned 3.x release) in real-model tests. */

/** One native batch: tokens added per sequence id. */
export type Batch = Map<number, number>;

type NativeContext = Record<string, (...args: unknown[]) => unknown>;

export interface BatchHooks {
  /** At the start of every batch. */
  onBatch?(): void;
  /** Once a batch's decode is under way (on llama.cpp's worker thread), with its outcome to come. */
  onDecode?(outcome: Promise<unknown>): void;
}

/** The native context behind a model's (main) context. */
export function nativeContextOf(model: unknown): NativeContext {
  return (model as { context: { _ctx: NativeContext } }).context._ctx;
}

/** Records every batch of `native` into the returned list, calling `hooks` on the way. */
export function recordBatches(native: NativeContext, hooks: BatchHooks = {}): Batch[] {
  const batches: Batch[] = [];
  const { initBatch, addToBatch, decodeBatch } = native;
  Object.defineProperty(native, "initBatch", { configurable: true, value: (...args: unknown[]) => {
    batches.push(new Map());
    hooks.onBatch?.();
    return initBatch?.apply(native, args);
  } });
  Object.defineProperty(native, "addToBatch", { configurable: true, value: (...args: unknown[]) => {
    const batch = batches.at(-1);
    const id = Number(args[0]);
    batch?.set(id, (batch.get(id) ?? 0) + (args[2] as Uint32Array).length);
    return addToBatch?.apply(native, args);
  } });
  Object.defineProperty(native, "decodeBatch", { configurable: true, value: (...args: unknown[]) => {
    const outcome = decodeBatch?.apply(native, args) as Promise<unknown>;
    hooks.onDecode?.(outcome);
    return outcome;
  } });
  return batches;
}

/** recordBatches until the returned stop() puts back the methods it wrapped. */
export function watchBatches(native: NativeContext, hooks: BatchHooks = {}): { batches: Batch[]; stop(): void } {
  const wrapped = ["initBatch", "addToBatch", "decodeBatch"].map((name) => [name, native[name]] as const);
  const batches = recordBatches(native, hooks);
  const stop = () => {
    for (const [name, value] of wrapped) Object.defineProperty(native, name, { configurable: true, writable: true, value });
  };
  return { batches, stop };
}
