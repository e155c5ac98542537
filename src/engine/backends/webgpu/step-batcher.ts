/**
 * Decode steps of a WebGPU model's sequences, taken together. Each generating sequence asks for its next token here;
 * the asks that arrive in one turn of the event loop become one step: a lone ask runs its sequence's own decode plan
 * (the single-token kernels), several run as one batch through the model's TokenBatch, which reads the weights once
 * for all of them. One step runs at a time; asks made while it runs wait for the next. When a step's results
 * resolve, every sequence's loop asks again within the same turn (its continuations are microtasks), so the next
 * step, started a turn later, gathers them all.
 */
import { EngineError } from "../../../errors/engine-error.js";
import type { StepStats } from "../../backend.js";
import type { GpuDevice } from "./device.js";
import type { DecodePlan, DecodeStepResult } from "./plan/decode.js";
import type { Place, RowWant, TokenBatch } from "./plan/token-batch.js";

interface Ask {
  plan: DecodePlan;
  token: number;
  want: RowWant;
  place: Place;
  resolve(result: DecodeStepResult): void;
  reject(error: unknown): void;
}

export class StepBatcher {
  private waiting: Ask[] = [];
  private running = false;
  private scheduled = false;
  /** Steps so far, their tokens, the GPU's time in them and the host's time between them (see stats()). */
  private readonly totals: StepStats = { steps: 0, tokens: 0, computeMs: 0, hostMs: 0 };
  /** When the last step ended, and the plans it decoded. */
  private last: { end: number; plans: Set<DecodePlan> } | undefined;

  /** `batch` undefined: every step is one sequence's own. */
  constructor(private readonly gpu: GpuDevice, private readonly batch: TokenBatch | undefined) {}

  /**
   * Decodes `token` at the plan's next position; `want` reads back its logits, or its best candidates (selected on a
   * GPU; on a software adapter the logits come instead).
   */
  feed(plan: DecodePlan, token: number, want: RowWant): Promise<DecodeStepResult> {
    const place = plan.nextPlace();
    return new Promise((resolve, reject) => {
      this.waiting.push({ plan, token, want, place, resolve, reject });
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.running || this.scheduled || this.waiting.length === 0) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      void this.run();
    });
  }

  /**
   * Steps and tokens so far, the time from each step's submit to its results (computeMs), and the time between two
   * steps of a sequence that generated in both (hostMs: its sampling, events and writes, and the wait for the others).
   */
  stats(): StepStats {
    return { ...this.totals };
  }

  private async run(): Promise<void> {
    const most = this.batch?.decodeRows ?? 1;
    const asks = this.waiting.splice(0, most);
    this.running = true;
    const start = performance.now();
    if (this.last && asks.some((ask) => this.last!.plans.has(ask.plan))) this.totals.hostMs += start - this.last.end;
    try {
      await this.step(asks);
    } finally {
      const end = performance.now();
      this.totals.steps++;
      this.totals.tokens += asks.length;
      this.totals.computeMs += end - start;
      this.last = { end, plans: new Set(asks.map((ask) => ask.plan)) };
      this.running = false;
      this.schedule();
    }
  }

  private async step(asks: Ask[]): Promise<void> {
    if (asks.length === 1 || !this.batch) {
      // Alone, or without a batch plan: each sequence's own single-token kernels.
      for (const ask of asks) await ask.plan.step(ask.token, { logits: ask.want === "logits", top: ask.want === "top" }).then(ask.resolve, ask.reject);
      return;
    }
    let results;
    try {
      results = await this.batch.decode(asks.map((a) => a.token), asks.map((a) => a.place), asks.map((a) => a.want));
      this.gpu.throwIfFailed();
    } catch (error) {
      const failure = error instanceof EngineError ? error : (this.gpu.failure ?? new EngineError("backend_failure", `WebGPU decode step failed: ${String(error)}`, {}, { cause: error }));
      for (const ask of asks) ask.reject(failure);
      return;
    }
    asks.forEach((ask, i) => {
      ask.plan.position = ask.place[1] + 1;
      ask.resolve({ token: results.ids[i]!, logits: results.logits[i], top: results.top[i] });
    });
  }
}
