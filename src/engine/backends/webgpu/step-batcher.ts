/**
 * Decode steps of a WebGPU model's sequences, taken together. Each generating sequence asks for its next token here;
 * the asks that arrive in one turn of the event loop become one step: a lone ask runs its sequence's own decode plan
 * (the single-token kernels), several run as one batch through the model's TokenBatch, which reads the weights once
 * for all of them. One step runs at a time; asks made while it runs wait for the next. When a step's results
 * resolve, every sequence's loop asks again within the same turn (its continuations are microtasks), so the next
 * step, started a turn later, gathers them all.
 */
import { EngineError } from "../../../errors/engine-error.js";
import type { GpuDevice } from "./device.js";
import type { DecodePlan, DecodeStepResult } from "./plan/decode.js";
import type { Place, TokenBatch } from "./plan/token-batch.js";

interface Ask {
  plan: DecodePlan;
  token: number;
  logits: boolean;
  place: Place;
  resolve(result: DecodeStepResult): void;
  reject(error: unknown): void;
}

export class StepBatcher {
  private waiting: Ask[] = [];
  private running = false;
  private scheduled = false;
  /** Steps run and the tokens they decoded (`/v1/models` details; tests check batching happened). */
  readonly counts = { steps: 0, tokens: 0, batched: 0 };

  /** `batch` undefined: every step is one sequence's own. */
  constructor(private readonly gpu: GpuDevice, private readonly batch: TokenBatch | undefined) {}

  /** Decodes `token` at the plan's next position; `logits` reads its full distribution back. */
  feed(plan: DecodePlan, token: number, logits: boolean): Promise<DecodeStepResult> {
    const place = plan.nextPlace();
    return new Promise((resolve, reject) => {
      this.waiting.push({ plan, token, logits, place, resolve, reject });
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

  private async run(): Promise<void> {
    const most = this.batch?.batch ?? 1;
    const asks = this.waiting.splice(0, most);
    this.running = true;
    try {
      await this.step(asks);
    } finally {
      this.running = false;
      this.schedule();
    }
  }

  private async step(asks: Ask[]): Promise<void> {
    this.counts.steps++;
    this.counts.tokens += asks.length;
    if (asks.length === 1 || !this.batch) {
      // Alone, or without a batch plan: each sequence's own single-token kernels.
      for (const ask of asks) await ask.plan.step(ask.token, { logits: ask.logits }).then(ask.resolve, ask.reject);
      return;
    }
    this.counts.batched++;
    let results;
    try {
      results = await this.batch.decode(asks.map((a) => a.token), asks.map((a) => a.place), asks.map((a) => a.logits));
      this.gpu.throwIfFailed();
    } catch (error) {
      const failure = error instanceof EngineError ? error : (this.gpu.failure ?? new EngineError("backend_failure", `WebGPU decode step failed: ${String(error)}`, {}, { cause: error }));
      for (const ask of asks) ask.reject(failure);
      return;
    }
    asks.forEach((ask, i) => {
      ask.plan.position = ask.place[1] + 1;
      ask.resolve({ token: results.ids[i]!, logits: results.logits[i] });
    });
  }
}
