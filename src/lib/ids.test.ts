import { describe, expect, it } from "vitest";
import { toToolCallId } from "./ids.js";

describe("toToolCallId", () => {
  it("writes one prefix per surface whatever the id carried", () => {
    expect(toToolCallId("call_", "abc")).toBe("call_abc");
    expect(toToolCallId("call_", "call_abc")).toBe("call_abc");
    expect(toToolCallId("toolu_", "call_abc")).toBe("toolu_abc");
    expect(toToolCallId("call_", "toolu_abc")).toBe("call_abc");
  });
});
