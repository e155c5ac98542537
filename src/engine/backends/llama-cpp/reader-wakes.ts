/**
 * When the readers of a model's generation events run: once the next decode step is under way.
 *
 * A token's reader does a stream's host work for it: the wire encoding, the SSE frame and the socket write. Woken as
 * the token is pushed, every stream's reader runs between two steps, while the device waits: at 32 streams of the
 * default model on 2 CPU cores that was 2.1–2.3 ms of the host's 3.4–3.8 ms a step. On a model whose every layer runs
 * on a GPU, each step runs in a libuv work item while the host is free, so the readers are woken just after the next
 * step is dispatched: their work overlaps that step's compute, as vLLM overlaps its output processing with the next
 * step. On a CPU the same work would only move into the step, where it competes with the compute threads for the
 * cores (2 cores: the same throughput, the step's compute longer by what the host saved), so CPU models wake readers
 * at once.
 */
import type { LlamaContext } from "node-llama-cpp";
import { shadowMethod } from "./native-module.js";

interface NativeBatch {
  decodeBatch(): Promise<void>;
}

export class ReaderWakes {
  private held: Array<() => void> = [];
  private fallback: NodeJS.Timeout | undefined;

  private constructor() {}

  /**
   * Wakes each reader of `context`'s events after its next step is dispatched; undefined when the installed
   * node-llama-cpp lacks the method watched. Attach it after the other hooks of the context's decode (it wraps them),
   * so that the step is under way when the readers wake.
   */
  static attach(context: LlamaContext): ReaderWakes | undefined {
    const native = (context as unknown as { _ctx?: Partial<NativeBatch> })._ctx;
    const decodeBatch = native?.decodeBatch;
    if (!native || typeof decodeBatch !== "function") return undefined;
    const wakes = new ReaderWakes();
    shadowMethod(native, "decodeBatch", () => {
      const step = decodeBatch.call(native);
      wakes.flush();
      return step;
    });
    return wakes;
  }

  /** Holds `reader` until the next step is dispatched. */
  wake(reader: () => void): void {
    this.held.push(reader);
    // When no step follows (the last token of the last stream), the readers wake on the next turn of the loop.
    this.fallback ??= setTimeout(() => this.flush(), 0);
  }

  private flush(): void {
    clearTimeout(this.fallback);
    this.fallback = undefined;
    const held = this.held;
    if (held.length === 0) return;
    this.held = [];
    for (const reader of held) reader();
  }
}
