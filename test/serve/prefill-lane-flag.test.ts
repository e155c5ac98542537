/**
 * `kiln serve --no-prefill-lane` on the real default model: the model is served without the second context that
 * evaluates long prompts (the flag reaches the llama.cpp backend), and start-up says which way each model runs.
 */
import { afterEach, describe, expect, it } from "vitest";
import { spawnServe, type ServeProcess } from "../helpers/spawn-serve.js";

let serve: ServeProcess | undefined;

afterEach(async () => {
  serve?.child.kill("SIGTERM");
  await serve?.exited;
  serve = undefined;
});

async function laneOf(args: string[]): Promise<{ listed: unknown; startup: string }> {
  serve = await spawnServe(["--model", "smollm2-135m", "--parallel", "2", "--ctx-size", "1024", "--log-level", "error", ...args]);
  const response = await fetch(`${serve.url}/v1/models`);
  const body = (await response.json()) as { data: Array<{ details?: { prefillLane?: unknown } }> };
  const startup = serve.stderr().split("\n").find((line) => line.startsWith("model smollm2-135m")) ?? "";
  serve.child.kill("SIGTERM");
  await serve.exited;
  serve = undefined;
  return { listed: body.data[0]?.details?.prefillLane, startup };
}

describe("kiln serve --no-prefill-lane", () => {
  it("serves the model without the prefill lane, which it has by default", async () => {
    const plain = await laneOf(["--no-prefill-lane"]);
    expect(plain.listed).toBe(false);
    expect(plain.startup).toMatch(/CPU threads \d+ \([^)]*\)$/);
    expect(plain.startup).not.toContain("prefill lane");
    const laned = await laneOf([]);
    expect(laned.listed).toBe(true);
    expect(laned.startup).toMatch(/, prefill lane\)$/);
  });
});
