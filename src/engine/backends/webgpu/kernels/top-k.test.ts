import { describe, expect, it } from "vitest";
import { topK } from "../sampler.js";
import { device, dispatchGrid, noGpu, randomFloats } from "./gpu-test-kit.fixture.js";
import { createStorage, readBack } from "./run-kernel.js";
import { createTopK, TOP_CANDIDATES, topKChunks, topKLevels } from "./top-k.js";

/** Every level on `rows` rows of `count` logits; the final (logit, id) pairs per row. */
async function topOnGpu(logits: Float32Array, rows: number): Promise<Array<Array<{ id: number; logit: number }>>> {
  const count = logits.length / rows;
  const levels = topKLevels(count);
  const pipelines = createTopK(device(), count);
  let input = createStorage(device(), logits);
  for (const [level, values] of levels.entries()) {
    const output = createStorage(device(), rows * topKChunks(values) * TOP_CANDIDATES * 8);
    dispatchGrid(pipelines[level]!, [input, output], [topKChunks(values), rows]);
    input = output;
  }
  const pairs = new Uint32Array(await readBack(device(), input, rows * TOP_CANDIDATES * 8));
  const floats = new Float32Array(pairs.buffer);
  return Array.from({ length: rows }, (_, r) => Array.from({ length: TOP_CANDIDATES }, (_, k) => ({ id: pairs[(r * TOP_CANDIDATES + k) * 2 + 1]!, logit: floats[(r * TOP_CANDIDATES + k) * 2]! })));
}

describe.skipIf(noGpu)("top-k kernel", () => {
  it.each([[900, 1], [5000, 2], [151_936, 2]])("keeps the CPU sampler's best candidates of %i logits in each of %i rows, in its order", async (count, rows) => {
    const logits = randomFloats(count * rows, 61, 8);
    // Ties inside and across chunks, at the top and at the edge of the kept candidates.
    for (let r = 0; r < rows; r++) {
      for (const at of [3, 700, 1023, 1024, count - 1]) if (at < count) logits[r * count + at] = 9.5;
      logits[r * count + (count >> 1)] = -Infinity;
    }
    const actual = await topOnGpu(logits, rows);
    expect(topKLevels(count).length).toBe(count <= 1024 ? 1 : count <= 16_384 ? 2 : 3);
    for (let r = 0; r < rows; r++) {
      const row = logits.subarray(r * count, (r + 1) * count);
      expect(actual[r], `row ${r}`).toEqual(topK(row, TOP_CANDIDATES).map(({ id, logit }) => ({ id, logit: Math.fround(logit) })));
    }
  });
});
