/**
 * Admission for one model: at most `parallel` requests run, the rest wait in a bounded FIFO queue. A full queue
 * refuses at once (overloaded, with a retry hint) so clients back off instead of piling up; a queued request whose
 * signal aborts leaves the queue.
 */
import { EngineError } from "../errors/engine-error.js";

export interface SchedulerOptions {
  /** Model id, for messages. */
  model: string;
  /** Requests that may run at once (the model's slots). */
  parallel: number;
  /** Requests that may wait; beyond this, `admit` throws `overloaded`. */
  queue: number;
  /** Seconds suggested to a refused client (retry-after). */
  retryAfter?: number;
}

/** A running request's claim on a slot; release it exactly once, in `finally`. */
export interface Permit { release(): void }

interface Waiter { grant(): void; reject(error: EngineError): void }

export class Scheduler {
  private active = 0;
  private readonly waiting: Waiter[] = [];
  private closed = false;

  constructor(private readonly options: SchedulerOptions) {}

  /** Requests running now. */
  get activeCount(): number { return this.active; }
  /** Requests waiting for a slot. */
  get queueDepth(): number { return this.waiting.length; }

  /** Resolves when the request may run. Throws `overloaded` at once when the queue is full. */
  admit(signal?: AbortSignal): Promise<Permit> {
    if (this.closed) return Promise.reject(new EngineError("overloaded", "The engine is shutting down", { retryAfter: this.retryAfter }));
    if (signal?.aborted) return Promise.reject(new EngineError("aborted", "The request was aborted"));
    if (this.active < this.options.parallel && this.waiting.length === 0) return Promise.resolve(this.grant());
    if (this.waiting.length >= this.options.queue) return Promise.reject(this.overloaded());
    return this.enqueue(signal);
  }

  /** Rejects every waiting request; running ones finish on their own. */
  close(): void {
    this.closed = true;
    for (const waiter of this.waiting.splice(0)) waiter.reject(new EngineError("overloaded", "The engine is shutting down", { retryAfter: this.retryAfter }));
  }

  private enqueue(signal: AbortSignal | undefined): Promise<Permit> {
    return new Promise<Permit>((resolve, reject) => {
      const onAbort = () => {
        this.remove(waiter);
        reject(new EngineError("aborted", "The request was aborted while queued"));
      };
      const waiter: Waiter = {
        grant: () => { signal?.removeEventListener("abort", onAbort); resolve(this.grant()); },
        reject: (error) => { signal?.removeEventListener("abort", onAbort); reject(error); },
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      this.waiting.push(waiter);
    });
  }

  private grant(): Permit {
    this.active++;
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        this.active--;
        this.waiting.shift()?.grant();
      },
    };
  }

  private remove(waiter: Waiter): void {
    const at = this.waiting.indexOf(waiter);
    if (at >= 0) this.waiting.splice(at, 1);
  }

  private get retryAfter(): number { return this.options.retryAfter ?? 1; }

  private overloaded(): EngineError {
    return new EngineError("overloaded", `model ${this.options.model} is overloaded: ${this.options.parallel} running and ${this.waiting.length} queued; retry later`, { retryAfter: this.retryAfter });
  }
}
