/**
 * Where a decode step's time goes: in llama.cpp's decode (the model's compute, on the GPU or the CPU threads,
 * until its results are back) or on the host between two decodes while sequences are generating (sampling each
 * sequence, node-llama-cpp's and kiln's per-token work, the event streams, the decode barrier). On a GPU the host
 * part is what keeps the device waiting; `kiln serve` reports both in /metrics.
 */
import type { LlamaContext } from "node-llama-cpp";
import type { StepStats } from "../../backend.js";
import { shadowMethod, whenSettled } from "./native-module.js";

interface NativeBatch {
  initBatch(size: number): void;
  decodeBatch(): Promise<void>;
}

export class StepClock {
  readonly stats: StepStats = { steps: 0, tokens: 0, computeMs: 0, hostMs: 0 };
  private lastEnd: number | undefined;

  private constructor(private readonly busy: () => boolean) {}

  /**
   * Nothing generates any more: the gap before the next decode is not host work. Without this the first step of the
   * next request counted the idle time before it (seconds of "host" time after a pause, which made the host's share in
   * /metrics and the benchmark's figures depend on how long clients paused).
   */
  idle(): void {
    this.lastEnd = undefined;
  }

  /**
   * Times `context`'s decodes; `busy`: sequences are generating, so a gap between two decodes that both saw it true
   * was host work (an idle one is not, see idle()). Undefined when the installed node-llama-cpp lacks the methods watched.
   */
  static attach(context: LlamaContext, busy: () => boolean): StepClock | undefined {
    const native = (context as unknown as { _ctx?: Partial<NativeBatch> })._ctx;
    const { initBatch, decodeBatch } = native ?? {};
    if (!native || typeof initBatch !== "function" || typeof decodeBatch !== "function") return undefined;
    const clock = new StepClock(busy);
    shadowMethod(native, "initBatch", (size) => {
      clock.stats.tokens += size;
      initBatch.call(native, size);
    });
    shadowMethod(native, "decodeBatch", () => {
      const started = performance.now();
      if (clock.lastEnd !== undefined && clock.busy()) clock.stats.hostMs += started - clock.lastEnd;
      return whenSettled(decodeBatch.call(native), () => {
        const ended = performance.now();
        clock.stats.steps++;
        clock.stats.computeMs += ended - started;
        // The gap to the next step is host work only if sequences generate at both of its ends (a model's warm-up
        // step, or a prompt's, is followed by no generating sequence's work).
        clock.lastEnd = clock.busy() ? ended : undefined;
      });
    });
    return clock;
  }
}
