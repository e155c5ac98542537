import { describe, expect, it } from "vitest";
import { EngineError } from "../engine/index.js";
import { guardStream } from "./stream-guard.js";
import { collectAll as collect } from "../../test/helpers/collect.js";

async function* frames(failure?: Error): AsyncGenerator<string> {
  yield "a\n\n";
  yield "b\n\n";
  if (failure) throw failure;
}

describe("guardStream", () => {
  it("passes frames through untouched when nothing fails", async () => {
    expect(await collect(guardStream(frames(), () => ["never\n\n"]))).toEqual(["a\n\n", "b\n\n"]);
  });

  it("turns a failure after frames were sent into the surface's in-band error, as an EngineError, then ends", async () => {
    const seen: EngineError[] = [];
    const guarded = guardStream(frames(new Error("socket gone")), (error) => {
      seen.push(error);
      return [`error: ${error.code}\n\n`];
    });
    expect(await collect(guarded)).toEqual(["a\n\n", "b\n\n", "error: internal\n\n"]);
    expect(seen[0]).toBeInstanceOf(EngineError);
    expect(seen[0]!.message).toContain("socket gone");
  });

  it("keeps the code of an EngineError thrown mid-stream", async () => {
    const guarded = guardStream(frames(new EngineError("backend_failure", "slot died")), (error) => [`${error.code}: ${error.message}`]);
    expect((await collect(guarded)).at(-1)).toBe("backend_failure: slot died");
  });
});
