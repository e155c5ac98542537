/** Waiting for something with a deadline and the request's abort signal, for requests that wait on a model's load. */
import { EngineError } from "../../errors/engine-error.js";

/**
 * Resolves when `promise` does; throws `timeout()` at `deadline` (epoch ms) and `aborted` when `signal` aborts.
 * `promise` must not reject (the residency's load and room promises never do).
 */
export async function waitBounded(promise: Promise<void>, deadline: number, signal: AbortSignal | undefined, timeout: () => EngineError): Promise<void> {
  if (signal?.aborted) throw new EngineError("aborted", "The request was aborted while its model loaded");
  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  try {
    await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(timeout()), Math.max(0, deadline - Date.now()));
        onAbort = () => reject(new EngineError("aborted", "The request was aborted while its model loaded"));
        signal?.addEventListener("abort", onAbort, { once: true });
      }),
    ]);
  } finally {
    clearTimeout(timer);
    if (onAbort) signal?.removeEventListener("abort", onAbort);
  }
}

/** Wakes everyone waiting for a change (room freed, a load finished); each waiter then looks again. */
export class Wakeup {
  private waiters: Array<() => void> = [];

  /** A promise resolved at the next `wake()`. */
  next(): Promise<void> {
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  wake(): void {
    for (const resolve of this.waiters.splice(0)) resolve();
  }
}
