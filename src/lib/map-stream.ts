/**
 * One stage of an event stream, as a plain iterator: each item of the source passes through synchronous functions
 * on its way to the consumer. An async generator doing the same (`for await … yield`) makes four or five promises
 * per item; this makes one, and a stream's items pass several stages on every token.
 */

/** What a stage does; every function runs synchronously as items pass. */
export interface StreamStage<A, B> {
  /** The item for `item`, or undefined for none; `stop()` ends the stream after it (the source is closed). */
  map(item: A, stop: () => void): B | undefined;
  /** After the source's last item: one more item, or undefined. */
  end?(): B | undefined;
  /** The source failed: the item that ends the stream in the failure's place; throw to fail the stream. */
  fail?(error: unknown): B | undefined;
  /** Runs once when the stream is over: ended, failed, or left by its consumer. */
  close?(): void | Promise<void>;
  /** The consumer left before the end: how to let go of the source (default: close it). */
  leave?(source: AsyncIterator<A>): Promise<void>;
}

const DONE = { done: true, value: undefined } as const;

/** `source` through `stage`. */
export function mapStream<A, B>(source: AsyncIterable<A>, stage: StreamStage<A, B>): AsyncIterable<B> {
  return {
    [Symbol.asyncIterator](): AsyncIterator<B> {
      const iterator = source[Symbol.asyncIterator]();
      let over = false;
      let stopped = false;
      let closing: Promise<void> | undefined;
      const close = () => (closing ??= Promise.resolve().then(() => stage.close?.()));
      const stop = () => { stopped = true; };
      /** The stream's last item (none when undefined), once the stage closed. */
      const last = (value: B | undefined): Promise<IteratorResult<B>> => {
        over = true;
        return close().then(() => (value === undefined ? DONE : { done: false, value }));
      };
      const failed = (error: unknown): Promise<never> => {
        over = true;
        return close().then(() => { throw error; });
      };
      const onItem = (result: IteratorResult<A>): IteratorResult<B> | Promise<IteratorResult<B>> => {
        if (result.done) {
          try {
            return last(stage.end?.());
          } catch (error) {
            return failed(error);
          }
        }
        let value: B | undefined;
        try {
          value = stage.map(result.value, stop);
        } catch (error) {
          over = true;
          return Promise.resolve(iterator.return?.()).catch(() => undefined).then(() => failed(error));
        }
        if (stopped) {
          over = true;
          return Promise.resolve(iterator.return?.()).catch(() => undefined).then(() => last(value));
        }
        return value === undefined ? next() : { done: false, value };
      };
      const onError = (error: unknown): Promise<IteratorResult<B>> => {
        if (!stage.fail) return failed(error);
        try {
          return last(stage.fail(error));
        } catch (thrown) {
          return failed(thrown);
        }
      };
      const next = (): Promise<IteratorResult<B>> => (over ? Promise.resolve(DONE) : iterator.next().then(onItem, onError));
      return {
        next,
        return: async (value?: unknown) => {
          if (!over) {
            over = true;
            await (stage.leave ? stage.leave(iterator) : iterator.return?.());
          }
          await close();
          return { done: true, value: value as B };
        },
      };
    },
  };
}
