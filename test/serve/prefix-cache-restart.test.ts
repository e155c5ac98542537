/**
 * `kiln serve` restarted on the same KILN_HOME: the first request after the restart starts from the prefix saved
 * on disk (with the same greedy answer), and says so in its usage, in the request log and in /metrics.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import Anthropic from "@anthropic-ai/sdk";
import { afterAll, describe, expect, it } from "vitest";
import { makeModelHome, spawnServe, type ServeProcess } from "../helpers/spawn-serve.js";

const home = makeModelHome();
const config = join(home, "kiln.json");
writeFileSync(config, JSON.stringify({ parallel: 1, ctxSize: 1024, cacheMinTokens: 64 }));
let serve: ServeProcess | undefined;

afterAll(async () => {
  serve?.child.kill("SIGTERM");
  await serve?.exited;
});

const notes = Array.from({ length: 12 }, (_, i) => `Note ${i + 1} about kilns: it matters for the answer.`).join(" ");

async function ask(url: string) {
  const client = new Anthropic({ baseURL: url, apiKey: "unused", maxRetries: 0 });
  return client.messages.create({
    model: "smollm2-135m", max_tokens: 8,
    // SDK 1.x dropped `temperature` from its types; kiln honours it (greedy, so both answers must agree).
    ...({ temperature: 0 } as object),
    messages: [{ role: "user", content: `${notes} In one sentence, what are these notes about?` }],
  });
}

async function stop(process: ServeProcess): Promise<void> {
  process.child.kill("SIGTERM");
  expect(await process.exited).toBe(0);
}

describe("kiln serve after a restart", () => {
  it("answers the first request from the prefix saved on disk, and reports the tier", async () => {
    serve = await spawnServe(["--config", config], home);
    const cold = await ask(serve.url);
    expect(cold.usage.cache_read_input_tokens).toBe(0);
    await stop(serve);

    serve = await spawnServe(["--config", config], home);
    expect(serve.stderr()).toContain("prefix cache: RAM and disk");
    const warm = await ask(serve.url);
    const prompt = cold.usage.input_tokens;
    expect(warm.usage).toMatchObject({ cache_read_input_tokens: prompt - 1, input_tokens: 1 });
    expect(warm.content).toEqual(cold.content);
    const line = await serve.waitForLog(/"msg":"request".*"cacheTier":"disk"/);
    expect(JSON.parse(line)).toMatchObject({ cachedInputTokens: prompt - 1, cacheTier: "disk" });
    const metrics = await (await fetch(`${serve.url}/metrics`)).text();
    expect(metrics).toMatch(/^kiln_prefix_cache_hits_total\{model="smollm2-135m",tier="disk"\} 1$/m);
    expect(metrics).toMatch(new RegExp(`^kiln_prefix_cache_tokens_total\\{model="smollm2-135m",tier="disk"\\} ${prompt - 1}$`, "m"));
    expect(Number(/^kiln_prefix_cache_disk_bytes (\d+)/m.exec(metrics)?.[1])).toBeGreaterThan(0);
  });
});
