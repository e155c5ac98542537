import { describe, expect, it } from "vitest";
import { ALONE_TOKENS, DraftLength } from "./draft-length.js";

/** The next `count` decisions. */
const decisions = (length: DraftLength, count: number) => Array.from({ length: count }, () => length.next());

describe("DraftLength", () => {
  it("drafts first, then measures the target's own loop once drafting has been timed", () => {
    const length = new DraftLength(8);
    expect(length.next()).toBe(8);
    length.drafted(5, 500);
    expect(length.next()).toBe(0);
  });

  it("keeps drafting while drafting is faster, with a stretch of the target's own loop every eighth step", () => {
    const length = new DraftLength(8);
    length.drafted(6, 600);
    length.wentAlone(ALONE_TOKENS, ALONE_TOKENS * 150);
    expect(decisions(length, 16)).toEqual([8, 8, 8, 8, 8, 8, 8, 0, 8, 8, 8, 8, 8, 8, 8, 0]);
  });

  it("lets the target go alone while drafting is slower, probing a drafting step every eighth step", () => {
    const length = new DraftLength(4);
    length.drafted(2, 1000);
    length.wentAlone(ALONE_TOKENS, ALONE_TOKENS * 150);
    expect(decisions(length, 8)).toEqual([0, 0, 0, 0, 0, 0, 0, 4]);
  });

  it("follows a change of speed within a few steps", () => {
    const length = new DraftLength(8);
    length.drafted(2, 1000);
    length.wentAlone(ALONE_TOKENS, ALONE_TOKENS * 150);
    expect(length.next()).toBe(0);
    // The load changed: drafting steps now bring 8 tokens in 600 ms, the target alone 300 ms a token.
    for (let i = 0; i < 6; i++) {
      length.drafted(8, 600);
      length.wentAlone(ALONE_TOKENS, ALONE_TOKENS * 300);
    }
    expect(length.next()).toBe(8);
  });

  it("drafts at every step when told to always, however slow drafting has been", () => {
    const length = new DraftLength(4, true);
    length.drafted(2, 1000);
    length.wentAlone(ALONE_TOKENS, ALONE_TOKENS * 150);
    expect(decisions(length, 8)).toEqual([4, 4, 4, 4, 4, 4, 4, 4]);
  });
});
