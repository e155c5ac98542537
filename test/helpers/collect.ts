/** Every item of an async iterable, in order (Node 20 has no `Array.fromAsync`). */
export async function collectAll<T>(iterable: AsyncIterable<T>): Promise<T[]> {
  const items: T[] = [];
  for await (const item of iterable) items.push(item);
  return items;
}
