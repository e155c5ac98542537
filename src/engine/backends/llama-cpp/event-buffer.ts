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

  /**
   * Every event in order until the producer ends (then its failure, if any), with `onFinish` run once before the end
   * is reported or once the consumer leaves (`return()`). A plain iterator rather than an async generator: it makes
   * one promise per event.
   */
  drain(onFinish: () => Promise<void>): AsyncIterable<T> {
    let finishing: Promise<void> | undefined;
    const finish = () => (finishing ??= onFinish());
    const end = (): Promise<IteratorResult<T>> => finish().then(() => {
      if (this.failure) throw this.failure.error;
      return { done: true, value: undefined };
    });
    const next = (): Promise<IteratorResult<T>> => {
      if (this.items.length > 0) return Promise.resolve({ done: false, value: this.take() });
      if (this.ended) return end();
      return new Promise((resolve, reject) => {
        this.wakeConsumer = () => {
          if (this.items.length > 0) resolve({ done: false, value: this.take() });
          else next().then(resolve, reject);
        };
      });
    };
    const iterator: AsyncIterator<T> = {
      next,
      return: async (value?: unknown) => {
        await finish();
        return { done: true, value: value as T };
      },
    };
    return { [Symbol.asyncIterator]: () => iterator };
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
