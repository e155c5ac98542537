import { describe, expect, it } from "vitest";
import { argmaxChunks, createArgmax } from "./argmax.js";
import { device, noGpu, randomFloats } from "./gpu-test-kit.fixture.js";
import { bindBuffers, createStorage, dispatch, groupsFor, readBack } from "./run-kernel.js";

async function argmaxOnGpu(logits: Float32Array): Promise<number> {
  const { chunks, finish } = createArgmax(device(), logits.length);
  const partial = createStorage(device(), argmaxChunks(logits.length) * 8);
  const token = createStorage(device(), 4);
  dispatch(device(), [
    { pipeline: chunks, bindGroup: bindBuffers(device(), chunks, [createStorage(device(), logits), partial]), workgroups: groupsFor(argmaxChunks(logits.length)) },
    { pipeline: finish, bindGroup: bindBuffers(device(), finish, [partial, token]), workgroups: 1 },
  ]);
  return new Uint32Array(await readBack(device(), token, 4))[0]!;
}

describe.skipIf(noGpu)("argmax kernel (two stages)", () => {
  it("finds the index of the largest logit", async () => {
    const logits = randomFloats(5000, 41, 10);
    const expected = logits.indexOf(Math.max(...logits));
    expect(await argmaxOnGpu(logits)).toBe(expected);
  });

  it("breaks ties to the lowest index, across and within chunks", async () => {
    const logits = randomFloats(3000, 42);
    logits[2900] = 50;
    logits[700] = 50;
    logits[650] = 50; // same chunk as 700, lower index
    expect(await argmaxOnGpu(logits)).toBe(650);
  });
});
