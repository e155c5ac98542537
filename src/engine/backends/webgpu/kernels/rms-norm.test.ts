import { describe, expect, it } from "vitest";
import { device, noGpu, randomFloats } from "./gpu-test-kit.fixture.js";
import { createRmsNorm } from "./rms-norm.js";
import { bindBuffers, createStorage, dispatch, groupsFor, readFloats } from "./run-kernel.js";

describe.skipIf(noGpu)("RMSNorm kernel", () => {
  it("scales each row by rsqrt(mean(x²)+ε) and the gain, within 1e-5 relative", async () => {
    const rows = 3;
    const cols = 96;
    const eps = 1e-6;
    const x = randomFloats(rows * cols, 11, 3);
    const gain = randomFloats(cols, 12, 2);
    const y = createStorage(device(), x.byteLength);
    const pipeline = createRmsNorm(device(), rows, cols, eps);
    const bindGroup = bindBuffers(device(), pipeline, [createStorage(device(), x), y, createStorage(device(), gain)]);
    dispatch(device(), [{ pipeline, bindGroup, workgroups: groupsFor(rows) }]);
    const actual = await readFloats(device(), y, x.length);
    for (let r = 0; r < rows; r++) {
      const row = x.subarray(r * cols, (r + 1) * cols);
      const scale = 1 / Math.sqrt(row.reduce((s, v) => s + v * v, 0) / cols + eps);
      for (let k = 0; k < cols; k++) {
        const expected = row[k]! * scale * gain[k]!;
        expect(Math.abs(actual[r * cols + k]! - expected)).toBeLessThanOrEqual(1e-5 * Math.abs(expected) + 1e-7);
      }
    }
  });
});
