/**
 * A gate a scripted generation waits at after its `start` event while the gate is held, so a test can keep a
 * request in flight (its slot busy, its headers sent) for exactly as long as it needs, with no sleeps.
 */

/** Held or open; generations waiting at a held gate go on when it opens or their request is aborted. */
export interface ScriptGate {
  /** Generations that reach the gate from now on wait. */
  hold(): void;
  /** Lets every waiting generation go on. */
  open(): void;
  /** Resolves when the gate is open or `signal` aborts. */
  pass(signal?: AbortSignal): Promise<void>;
}

export function createScriptGate(): ScriptGate {
  let held: { promise: Promise<void>; resolve: () => void } | undefined;
  return {
    hold() {
      if (held) return;
      let resolve!: () => void;
      const promise = new Promise<void>((done) => (resolve = done));
      held = { promise, resolve };
    },
    open() {
      held?.resolve();
      held = undefined;
    },
    async pass(signal) {
      if (!held || signal?.aborted) return;
      const aborted = new Promise<void>((resolve) => signal?.addEventListener("abort", () => resolve(), { once: true }));
      await Promise.race([held.promise, aborted]);
    },
  };
}
