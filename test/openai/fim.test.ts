/**
 * Fill-in-the-middle with a real coder model (Qwen2.5-Coder-0.5B from the catalog, pulled into the store): a
 * `/v1/completions` request with `suffix` through the official openai SDK gets code that fits between the head of
 * a function and its return statement.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import OpenAI from "openai";
import { findCatalogEntry } from "../../src/models/catalog.js";
import { catalogModelPath } from "../helpers/real-model.js";
import { startTestServer, type TestServer } from "../helpers/server.js";

const MODEL = "qwen2.5-coder-0.5b";
let kiln: TestServer;
let client: OpenAI;

beforeAll(async () => {
  kiln = await startTestServer({ model: { id: MODEL, path: catalogModelPath(MODEL) }, parallel: 1, ctxSize: 1024 });
  client = new OpenAI({ apiKey: "unused", baseURL: `${kiln.url}/v1`, maxRetries: 0 });
}, 300_000);
afterAll(async () => kiln?.close());

const prefix = 'def mean(values):\n    """Return the arithmetic mean of a list of numbers."""\n';
const suffix = "    return total / count\n\n\nprint(mean([1, 2, 3, 6]))\n";

describe("fill-in-the-middle with a coder model", { timeout: 300_000 }, () => {
  it("has the FIM tokens the catalog says it has", () => {
    expect(kiln.engine.findModel(MODEL)!.fim).toBe(findCatalogEntry(MODEL)!.capabilities.fim);
    expect(kiln.engine.findModel(MODEL)!.fim).toBe(true);
  });

  it("fills a function's body so that the return statement after it works", async () => {
    const completion = await client.completions.create({ model: MODEL, prompt: prefix, suffix, max_tokens: 40, temperature: 0 });
    // The instruct model goes on past the middle, repeating the suffix; editors cut it there, and so does this test.
    const middle = completion.choices[0]!.text.split(suffix.split("\n")[0]!)[0]!;
    // The names the return statement uses come only from the suffix: the model must have read it.
    expect(middle).toMatch(/(^|\n)\s+total\s*=/);
    expect(middle).toMatch(/(^|\n)\s+count\s*=/);
    expect(middle.split("\n").filter((line) => line.trim()).every((line) => line.startsWith("    "))).toBe(true);
    // The filled-in program runs and prints the mean.
    const program = prefix + middle + (middle.endsWith("\n") ? "" : "\n") + suffix;
    const { stdout } = await promisify(execFile)("python3", ["-c", program]);
    expect(stdout.trim()).toBe("3.0");
  });

  it("builds the prompt from the model's FIM tokens", async () => {
    const spelled = `<|fim_prefix|>${prefix}<|fim_suffix|>${suffix}<|fim_middle|>`;
    const [fim, raw] = [
      await client.completions.create({ model: MODEL, prompt: prefix, suffix, max_tokens: 1, temperature: 0 }),
      await client.completions.create({ model: MODEL, prompt: spelled, max_tokens: 1, temperature: 0 }),
    ];
    expect(fim.usage!.prompt_tokens).toBe(raw.usage!.prompt_tokens);
    // Every token of the spelled-out prompt but the last comes from the cache the FIM request filled.
    expect(raw.usage!.prompt_tokens_details!.cached_tokens).toBe(raw.usage!.prompt_tokens - 1);
  });
});
