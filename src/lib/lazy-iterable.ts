/**
 * An async iterable whose source is opened by its first `next()` (a failure rejects that call, so a request refused
 * before its first event is still refused with a status), after which every call goes straight to the source's
 * iterator. It replaces an async generator that only delegates (`yield* (await open())`): each such layer makes
 * several promises per item, host work paid on every token of every stream.
 */
export function lazyIterable<T>(open: () => AsyncIterable<T> | Promise<AsyncIterable<T>>): AsyncIterable<T> {
  return {
    [Symbol.asyncIterator](): AsyncIterator<T> {
      let source: AsyncIterator<T> | undefined;
      let opening: Promise<AsyncIterator<T>> | undefined;
      let closed = false;
      // Opening starts within the first next(), as a generator's body would: a request joins its model's queue then.
      const opened = () => (opening ??= (async () => (source = (await open())[Symbol.asyncIterator]()))());
      return {
        next: () => {
          if (source) return source.next();
          if (closed) return Promise.resolve({ done: true, value: undefined });
          return opened().then((iterator) => (closed ? iterator.return?.() ?? { done: true as const, value: undefined } : iterator.next()));
        },
        // A consumer that leaves while the source opens closes it once it is open.
        return: async (value?: unknown) => {
          closed = true;
          const iterator = source ?? (opening && (await opening.catch(() => undefined)));
          await iterator?.return?.(value);
          return { done: true, value: value as T };
        },
      };
    },
  };
}
