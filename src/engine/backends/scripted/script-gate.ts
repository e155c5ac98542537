/**
 * A gate scripted generations wait at after their `start` event, so a test can keep a request in flight (its slot
 * busy, its headers sent) for exactly as long as it needs, with no sleeps.
 */

/** Catches the next generations that reach it; they go on when it opens or their request is aborted. */
export interface ScriptGate {
  /** The next `count` generations to reach the gate wait there (later ones pass). */
  hold(count?: number): void;
  /** Lets every waiting generation go on. */
  open(): void;
  /** Waits when the gate still has a catch left; resolves at once when `signal` aborts. */
  pass(signal?: AbortSignal): Promise<void>;
}

export function createScriptGate(): ScriptGate {
  let catches = 0;
  let waiting: Array<() => void> = [];
  return {
    hold(count = 1) {
      catches = count;
    },
    open() {
      catches = 0;
      for (const release of waiting) release();
      waiting = [];
    },
    async pass(signal) {
      if (catches === 0 || signal?.aborted) return;
      catches -= 1;
      await new Promise<void>((resolve) => {
        waiting.push(resolve);
        signal?.addEventListener("abort", () => resolve(), { once: true });
      });
    },
  };
}
