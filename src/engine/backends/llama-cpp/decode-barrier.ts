/**
 * A step barrier across the sequences generating in one context. node-llama-cpp starts its next decode step as soon
 * as the previous step's tokens are resolved, so a sequence whose loop is a few awaits behind misses the step and is
 * decoded alone in the next one; the sequences then stay out of phase and rarely share a batch. Each member waits
 * here after receiving its token until every other member has received its own; all are then released in the same
 * event-loop turn, ask for their next token together, and land in one batch. A sequence evaluating its prompt in
 * chunks is a member too, so each chunk shares a step with the others' tokens (see step-planner.ts).
 *
 * It also times the steps, release to release: what a generating member sees as its time per token. Each release
 * starts a step and is reported to `onStep` with the time the step before took, or undefined when a member joined,
 * left or finished its prompt during it (its contents are then not known); the step planner fits its cost model
 * from those times.
 */

export class DecodeBarrier {
  private members = 0;
  private prefilling = 0;
  // Two arrays swapped on release, so a step allocates nothing but the waiting promises.
  private waiting: Array<() => void> = [];
  private spare: Array<() => void> = [];
  private stepStarted: number | undefined;
  /** Whether the step under way has kept the members it started with. */
  private stepUnchanged = false;
  /** Called when the last generating member leaves (the step clock's idle mark). */
  onIdle: () => void = () => {};

  constructor(
    private readonly onStep?: (previousMs: number | undefined) => void,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** Sequences currently in their token loop. */
  get size(): number { return this.members; }

  /** Members generating tokens (not evaluating a prompt). */
  get generating(): number { return this.members - this.prefilling; }

  /** Sequences waiting for the others to arrive. */
  get arrived(): number { return this.waiting.length; }

  /** A sequence enters its token loop, or its prompt evaluation (`prefilling`). */
  join(prefilling = false): void {
    this.members++;
    if (prefilling) this.prefilling++;
    this.stepUnchanged = false;
  }

  /** A member that joined to evaluate its prompt now generates tokens. */
  finishPrefill(): void {
    this.prefilling--;
    this.stepUnchanged = false;
  }

  /** A sequence leaves (finished, aborted, failed or paused): the others no longer wait for it. */
  leave(prefilling = false): void {
    this.members--;
    if (prefilling) this.prefilling--;
    this.stepUnchanged = false;
    if (this.generating === 0) this.onIdle();
    this.releaseIfComplete();
  }

  /**
   * A member has its token; resolves once every current member has arrived. Undefined when it is released at once
   * (it is alone): a stream on its own then awaits nothing between two tokens.
   */
  arrive(): Promise<void> | undefined {
    if (this.members <= 1 && this.waiting.length === 0) {
      this.stepEnded();
      return undefined;
    }
    return new Promise<void>((resolve) => {
      this.waiting.push(resolve);
      this.releaseIfComplete();
    });
  }

  private releaseIfComplete(): void {
    if (this.waiting.length === 0 || this.waiting.length < this.members) return;
    this.stepEnded();
    const wake = this.waiting;
    this.waiting = this.spare;
    this.spare = wake;
    for (const resolve of wake) resolve();
    wake.length = 0;
  }

  private stepEnded(): void {
    const now = this.now();
    this.onStep?.(this.stepUnchanged && this.stepStarted !== undefined ? now - this.stepStarted : undefined);
    this.stepStarted = now;
    this.stepUnchanged = this.members > 0;
  }
}
