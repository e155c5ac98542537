import { describe, expect, it } from "vitest";
import { device, noGpu, randomFloats } from "./gpu-test-kit.fixture.js";
import { createRmsNorm } from "./rms-norm.js";
import { bindBuffers, createStorage, dispatch, groupsFor, readFloats } from "./run-kernel.js";

describe.skipIf(noGpu)("RMSNorm kernel", () => {
  // One invocation per row (software adapters), and a workgroup per row whose lanes share it (GPUs), with columns that
  // leave some lanes a vec4 fewer than others.
  for (const lanes of [undefined, 4, 64]) {
    it(`scales each row by rsqrt(mean(x²)+ε) and the gain, within 1e-5 relative (${lanes ?? "one invocation per row"}${lanes ? " lanes" : ""})`, async () => {
      const rows = 3;
      const cols = 1544;
      const eps = 1e-6;
      const x = randomFloats(rows * cols, 11, 3);
      const gain = randomFloats(cols, 12, 2);
      const y = createStorage(device(), x.byteLength);
      const pipeline = createRmsNorm(device(), rows, cols, eps, lanes);
      const bindGroup = bindBuffers(device(), pipeline, [createStorage(device(), x), y, createStorage(device(), gain)]);
      dispatch(device(), [{ pipeline, bindGroup, workgroups: lanes ? rows : groupsFor(rows) }]);
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
  }
});
