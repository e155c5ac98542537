/**
 * A gate scripted generations wait at after their `start` event, so a test can keep a request in flight (its slot
 * busy, its headers sent) for exactly as long as it needs, with no sleeps.
 */
import type { ScriptGate } from "../../model-specs.js";

/** A gate that lets everything pass until `hold` is called. */
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
