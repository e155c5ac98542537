import { describe, expect, it } from "vitest";
import { decodePathParam, hasDotSegment, matchCanonicalPath } from "./canonical-path.js";

const patterns = ["/", "/health", "/v1/messages", "/messages", "/v1/messages/count_tokens", "/v1/models", "/v1/models/:id", "/v1/chat/completions"];

describe("matchCanonicalPath", () => {
  it("matches exact paths", () => {
    expect(matchCanonicalPath("/v1/messages", patterns)?.pattern).toBe("/v1/messages");
    expect(matchCanonicalPath("/v1/messages/count_tokens", patterns)?.pattern).toBe("/v1/messages/count_tokens");
    expect(matchCanonicalPath("/", patterns)?.pattern).toBe("/");
  });

  it("tolerates doubled and trailing slashes", () => {
    expect(matchCanonicalPath("/v1//chat/completions", patterns)?.path).toBe("/v1/chat/completions");
    expect(matchCanonicalPath("//v1/models/", patterns)?.path).toBe("/v1/models");
  });

  it("strips base-path prefixes", () => {
    expect(matchCanonicalPath("/prefix/v1/messages", patterns)?.path).toBe("/v1/messages");
    expect(matchCanonicalPath("/a/b/messages", patterns)?.path).toBe("/messages");
  });

  it("captures ids containing slashes", () => {
    expect(matchCanonicalPath("/v1/models/Org/Name", patterns)?.params).toEqual({ id: "Org/Name" });
    expect(matchCanonicalPath("/v1/models/Org%2FName", patterns)?.params).toEqual({ id: "Org%2FName" });
    expect(decodePathParam("Org%2FName")).toBe("Org/Name");
    expect(decodePathParam("bad%E0%A4%A")).toBe("bad%E0%A4%A");
  });

  it("leaves unknown paths unmatched and never matches / by suffix", () => {
    expect(matchCanonicalPath("/nope", patterns)).toBeUndefined();
    expect(matchCanonicalPath("/v1/models/", ["/v1/models/:id"])).toBeUndefined();
  });

  it("finds dot segments, plain or percent-encoded, in the path only", () => {
    for (const target of ["/v1/messages/../chat/completions", "/v1/./models", "/v1/messages/%2e%2E/x", "/v1/%2e/models", "/..", "/v1/models/.?x=1"]) {
      expect(hasDotSegment(target), target).toBe(true);
    }
    for (const target of ["/v1/models/a.b", "/v1/models/...", "/v1/models/..x", "/v1/models?path=../x", "/v1/models/%2e%2e%2e"]) {
      expect(hasDotSegment(target), target).toBe(false);
    }
  });
});
