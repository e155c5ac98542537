import type { GenerationEvent } from "../../events.js";
import type { DecodeBarrier } from "./decode-barrier.js";
import type { EventBuffer } from "./event-buffer.js";

/**
 * One sequence's place at the decode barrier: a member while it evaluates its prompt in chunks and from its first
 * token until it stops, stepping out while its reader lags a full buffer behind (so the others go on without it)
 * and back in once the reader catches up.
 */
export class StepPacer {
  private joined = false;
  private prefilling = false;

  constructor(private readonly barrier: DecodeBarrier | undefined, private readonly out: EventBuffer<GenerationEvent>) {}

  startPrefill(): void {
    if (!this.barrier) return;
    this.barrier.join(true);
    this.joined = this.prefilling = true;
  }

  finishPrefill(): void {
    if (this.prefilling) this.barrier?.finishPrefill();
    this.prefilling = false;
  }

  /** Waits for the other members after a chunk, so the next one shares their next step. */
  async arrive(): Promise<void> {
    await this.barrier?.arrive();
  }

  /** Waits, if need be, for the reader to make room and for the other members; undefined: nothing to wait for. */
  beforeNextToken(): Promise<void> | undefined {
    if (this.out.full) {
      this.stop();
      return this.out.waitForRoom().then(() => this.rejoin());
    }
    return this.rejoin();
  }

  private rejoin(): Promise<void> | undefined {
    if (!this.barrier) return undefined;
    if (!this.joined) {
      this.barrier.join();
      this.joined = true;
    }
    return this.barrier.arrive();
  }

  stop(): void {
    if (this.joined) this.barrier?.leave(this.prefilling);
    this.joined = this.prefilling = false;
  }
}
