import { describe, expect, it } from "vitest";
import { PassThrough } from "node:stream";
import { createProgressRenderer, describeProgress, formatBytes } from "./progress-renderer.js";
import type { PullProgress } from "./pull-progress.js";

const MiB = 1024 * 1024;
const at = (receivedBytes: number, phase: PullProgress["phase"] = "download"): PullProgress => ({ phase, name: "m", receivedBytes, totalBytes: 100 * MiB });

/** Feeds events at the given clock times; returns what was written. */
function render(tty: boolean, steps: Array<[number, PullProgress]>): string {
  const stream = new PassThrough();
  let clock = 0;
  const renderer = createProgressRenderer(stream, { tty, now: () => clock });
  for (const [time, event] of steps) {
    clock = time;
    renderer.update(event);
  }
  renderer.finish();
  return stream.read()?.toString() ?? "";
}

describe("describeProgress", () => {
  it("shows a bar, bytes of total, rate and ETA", () => {
    expect(describeProgress(at(25 * MiB), 5 * MiB)).toBe("downloading m [######..................] 25.0 MiB / 100.0 MiB  5.0 MiB/s  ETA 15s");
    expect(describeProgress({ ...at(3 * MiB), totalBytes: null }, 0)).toBe("downloading m 3.0 MiB");
  });

  it("names the part of a multi-part pull after the bar over all parts, and the assembly", () => {
    expect(describeProgress({ ...at(50 * MiB), part: { index: 3, count: 6 } }, 0)).toBe("downloading m [############............] 50.0 MiB / 100.0 MiB  part 3/6");
    expect(describeProgress(at(MiB, "assemble"), 0)).toMatch(/^assembling m \[/);
  });

  it("formats bytes in binary units", () => {
    expect([formatBytes(512), formatBytes(1536), formatBytes(98362432)]).toEqual(["512 B", "1.5 KiB", "93.8 MiB"]);
  });
});

describe("createProgressRenderer", () => {
  const steps: Array<[number, PullProgress]> = [[0, at(0)], [50, at(MiB)], [1000, at(10 * MiB)], [6000, at(60 * MiB)], [6100, at(100 * MiB)], [6200, at(100 * MiB, "done")]];

  it("redraws one line in place on a terminal, at most every 100 ms", () => {
    const out = render(true, steps);
    expect(out.split("\r\x1b[2K").filter(Boolean)).toHaveLength(5);
    expect(out.endsWith("pulled m (100.0 MiB)\n")).toBe(true);
  });

  it("writes separate lines only every few seconds and at phase changes elsewhere", () => {
    const lines = render(false, steps).trim().split("\n");
    expect(lines.map((l) => l.split(" ")[0])).toEqual(["downloading", "downloading", "pulled"]);
    expect(lines[1]).toContain("60.0 MiB / 100.0 MiB");
  });
});
