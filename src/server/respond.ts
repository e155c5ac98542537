/**
 * "Pull the first event, then commit headers": an engine error before `start` (unknown model, context
 * overflow, queue full) must become a real HTTP status with a JSON body, which is only possible while no byte
 * of the 200 stream has been sent. Also the JSON response helper every route uses.
 */

/**
 * Awaits the first item of `source` (its rejection propagates to the caller) and returns an iterable that
 * yields that item and then the rest. Closing the returned iterable closes the source.
 */
export async function pullFirst<T>(source: AsyncIterable<T>): Promise<AsyncIterable<T>> {
  const iterator = source[Symbol.asyncIterator]();
  const first = await iterator.next();
  return {
    [Symbol.asyncIterator]() {
      let replayed = false;
      return {
        // Not async: the source's own promise is handed on, with no extra one per item.
        next: () => {
          if (replayed) return iterator.next();
          replayed = true;
          return Promise.resolve(first);
        },
        return: async (value?: unknown) => {
          await iterator.return?.(value);
          return { done: true, value: undefined as T };
        },
      };
    },
  };
}

/** A JSON response with `content-type: application/json` (the TS SDK treats anything else as text). */
export function jsonResponse(body: unknown, status = 200, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json", ...headers } });
}
