/**
 * A small queue between a request's token loop (the producer) and whoever reads its events (the consumer), so a
 * consumer held up by a slow client does not hold the token loop — and through the decode barrier, every other
 * sequence. The producer pauses only when `capacity` events are waiting unread. The consumer is woken through `wakeReader`:
 * at once, or where the model says so once its next decode step is under way (reader-wakes.ts).
 */
export class EventBuffer<T> {
  private readonly items: T[] = [];
  private ended = false;
  private failure: { error: unknown } | undefined;
  private wakeConsumer: (() => void) | undefined;
  private wakeProducer: (() => void) | undefined;
  /** The consumer is gone: nothing more will be read. */
  closed = false;

  constructor(private readonly capacity: number, private readonly wakeReader: (reader: () => void) => void = (reader) => reader()) {}

  /** True while the consumer lags `capacity` events behind. */
  get full(): boolean {
    return !this.closed && this.items.length >= this.capacity;
  }

  push(item: T): void {
    if (this.closed) return;
    this.items.push(item);
    this.wake();
  }

  /** No more events; `error`: the producer failed and the consumer rethrows it after the events before it. */
  end(failure?: { error: unknown }): void {
    this.ended = true;
    this.failure = failure;
    this.wake();
  }

  /** The consumer stopped reading: drops what is queued and unblocks the producer. */
  close(): void {
    this.closed = true;
    this.items.length = 0;
    this.wakeProducer?.();
    this.wakeProducer = undefined;
  }

  /** Resolves once the consumer has read below capacity (or left). */
  waitForRoom(): Promise<void> {
    if (!this.full) return Promise.resolve();
    return new Promise((resolve) => { this.wakeProducer = resolve; });
  }

  /** Yields every event in order until the producer ends. */
  async *drain(): AsyncGenerator<T> {
    for (;;) {
      if (this.items.length > 0) {
        yield this.take();
        continue;
      }
      if (this.ended) {
        if (this.failure) throw this.failure.error;
        return;
      }
      await new Promise<void>((resolve) => { this.wakeConsumer = resolve; });
    }
  }

  private take(): T {
    const item = this.items.shift() as T;
    if (this.wakeProducer && !this.full) {
      const wake = this.wakeProducer;
      this.wakeProducer = undefined;
      wake();
    }
    return item;
  }

  private wake(): void {
    const wake = this.wakeConsumer;
    this.wakeConsumer = undefined;
    if (wake) this.wakeReader(wake);
  }
}
