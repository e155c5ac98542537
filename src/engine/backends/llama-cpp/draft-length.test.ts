import { describe, expect, it } from "vitest";
import { DraftLength } from "./draft-length.js";

/** Feeds `steps` drafting steps of every size from 1 to max, timed by the given costs, each keeping `keep(n)` proposals. */
function observe(length: DraftLength, costs: { targetFixed: number; targetPerToken: number; draftPerToken: number }, keep: (n: number) => number, steps = 40): void {
  for (let i = 0; i < steps; i++) {
    const n = 1 + (i % length.max);
    length.drafted(n, costs.draftPerToken * n);
    length.verified(n + 1, n, keep(n), costs.targetFixed + costs.targetPerToken * (n + 1));
  }
}

describe("DraftLength", () => {
  it("drafts in full where extra tokens cost little beside a step and the target keeps most proposals", () => {
    const length = new DraftLength(8);
    observe(length, { targetFixed: 60, targetPerToken: 4, draftPerToken: 12 }, (n) => n);
    expect(length.next()).toBe(8);
  });

  it("drafts fewer tokens when the target keeps fewer of them", () => {
    const length = new DraftLength(8);
    observe(length, { targetFixed: 60, targetPerToken: 4, draftPerToken: 12 }, (n) => Math.min(n, 1));
    const n = length.next();
    expect(n).toBeGreaterThan(0);
    expect(n).toBeLessThan(8);
  });

  it("lets the target go alone where every token costs its own compute, drafting again after each stretch", () => {
    const length = new DraftLength(8);
    // A CPU shared with other work: an extra verified token costs as much as a token alone, a draft token nearly as much.
    observe(length, { targetFixed: 50, targetPerToken: 88, draftPerToken: 80 }, (n) => n);
    expect([length.next(), length.next(), length.next(), length.next()]).toEqual([0, 8, 0, 8]);
  });
});
