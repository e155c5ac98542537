/** POST /v1/completions (raw prompt, no chat template) against a real server with the official openai SDK. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkRecordedStreams } from "../helpers/openai-stream.js";
import { MODEL_ID, TEST_KEY, startOpenAITestServer, type OpenAITestServer } from "../helpers/openai-server.js";

let kiln: OpenAITestServer;
beforeAll(async () => { kiln = await startOpenAITestServer(); });
afterAll(async () => {
  expect(await checkRecordedStreams(kiln.recorder)).toEqual([]);
  await kiln?.close();
});

describe("legacy completions", { timeout: 300_000 }, () => {
  it("completes a raw prompt with echo and real usage", async () => {
    const prompt = "def add(a, b):\n";
    const data = await kiln.client.completions.create({ model: MODEL_ID, prompt, max_tokens: 8, temperature: 0, echo: true });
    expect(data).toMatchObject({ object: "text_completion", model: MODEL_ID });
    const choice = data.choices[0]!;
    expect(choice).toMatchObject({ index: 0, logprobs: null });
    expect(choice.text.startsWith(prompt)).toBe(true);
    expect(["stop", "length"]).toContain(choice.finish_reason);
    expect(data.usage!.completion_tokens).toBeLessThanOrEqual(8);
    expect(data.usage!.total_tokens).toBe(data.usage!.prompt_tokens + data.usage!.completion_tokens);
  });

  it("generates past the end of text to max_tokens with ignore_eos (vLLM's and llama-server's extension)", async () => {
    const ask = { model: MODEL_ID, messages: [{ role: "user" as const, content: "What is 2+2? Answer with a number." }], max_tokens: 48, temperature: 0 };
    const ended = await kiln.client.chat.completions.create(ask);
    // The model ends its answer early on its own...
    expect(ended.choices[0]!.finish_reason).toBe("stop");
    expect(ended.usage!.completion_tokens).toBeLessThan(48);
    // ...and goes on to max_tokens when asked to ignore the end, on both APIs.
    const past = await kiln.client.chat.completions.create({ ...ask, ignore_eos: true } as typeof ask);
    expect(past.choices[0]!.finish_reason).toBe("length");
    expect(past.usage!.completion_tokens).toBe(48);
    expect(past.choices[0]!.message.content!.startsWith(ended.choices[0]!.message.content!)).toBe(true);
    const raw = await kiln.client.completions.create({ model: MODEL_ID, prompt: "The end.", max_tokens: 24, temperature: 0, ignore_eos: true } as never);
    expect(raw.choices[0]!.finish_reason).toBe("length");
    expect(raw.usage!.completion_tokens).toBe(24);
  });

  it("tokenizes the prompt verbatim: no chat template around it", async () => {
    const chat = await kiln.client.chat.completions.create({ model: MODEL_ID, messages: [{ role: "user", content: "Hello" }], max_tokens: 1 });
    const raw = await kiln.client.completions.create({ model: MODEL_ID, prompt: "Hello", max_tokens: 1 });
    expect(raw.usage!.prompt_tokens).toBeLessThan(chat.usage!.prompt_tokens);
    expect(raw.usage!.prompt_tokens).toBeLessThanOrEqual(2);
  });

  it("answers a Zed-style request without a stream key and defaults max_tokens to 16", async () => {
    const response = await fetch(`${kiln.baseURL}/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${TEST_KEY}`, "content-type": "application/json" },
      body: JSON.stringify({ model: MODEL_ID, prompt: "The sky is", temperature: 1 }),
    });
    expect(response.status).toBe(200);
    const body = await response.json();
    for (const key of ["id", "object", "created", "model", "choices", "usage"]) expect(body).toHaveProperty(key);
    expect(typeof body.choices[0].finish_reason).toBe("string");
    expect(body.usage.completion_tokens).toBeLessThanOrEqual(16);
  });

  it("streams a Continue-style request with ten stop strings and include_usage", async () => {
    const stop = ["\n\n", "\ndef", "```", "<|endoftext|>", "<file_sep>", "<fim_prefix>", "<fim_suffix>", "<fim_middle>", "/src/", "#- coding"];
    const stream = await kiln.client.completions.create({ model: MODEL_ID, prompt: "# add two numbers\ndef add(a, b):", max_tokens: 12, stop, stream: true, stream_options: { include_usage: true } });
    let text = "";
    let usage;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.text ?? "";
      usage = chunk.usage ?? usage;
    }
    for (const s of stop) expect(text.includes(s)).toBe(false);
    expect(usage!.completion_tokens).toBeGreaterThan(0);
  });

  it("either fills in the middle or refuses suffix with a 400 naming it", async () => {
    const request = { model: MODEL_ID, prompt: "def add(a, b):\n    return ", suffix: "\n\nprint(add(1, 2))\n", max_tokens: 4 };
    if (kiln.engine.findModel(MODEL_ID)!.fim) {
      expect((await kiln.client.completions.create(request)).choices[0]!.text).toBeTypeOf("string");
      return;
    }
    await expect(kiln.client.completions.create(request)).rejects.toMatchObject({ status: 400, param: "suffix", type: "invalid_request_error" });
  });

  it("returns logprobs when asked", async () => {
    const data = await kiln.client.completions.create({ model: MODEL_ID, prompt: "One, two,", max_tokens: 3, logprobs: 2, temperature: 0 });
    const logprobs = data.choices[0]!.logprobs!;
    expect(logprobs.tokens!.length).toBe(data.usage!.completion_tokens);
    expect(logprobs.tokens!.join("")).toBe(data.choices[0]!.text);
    expect(logprobs.token_logprobs!.every((value) => value <= 0)).toBe(true);
    expect(Object.keys(logprobs.top_logprobs![0]!).length).toBeGreaterThan(0);
  });

  it("refuses a prompt list holding an empty prompt with a 400 before a streamed byte", async () => {
    const request = { model: MODEL_ID, prompt: ["One, two,", ""], max_tokens: 2, stream: true as const };
    const error = await kiln.client.completions.create(request).catch((caught) => caught);
    expect(error).toMatchObject({ status: 400, param: "prompt.1", type: "invalid_request_error" });
    await expect(kiln.client.completions.create({ ...request, prompt: "" })).rejects.toMatchObject({ status: 400, param: "prompt" });
  });

  it("samples alike for one seed and apart for another, negative seeds included", async () => {
    const sample = async (seed: number) => (await kiln.client.completions.create({ model: MODEL_ID, prompt: "My favourite word is", max_tokens: 12, temperature: 1.5, seed })).choices[0]!.text;
    const [minusOne, minusOneAgain, minusTwo, one] = [await sample(-1), await sample(-1), await sample(-2), await sample(1)];
    expect(minusOneAgain).toBe(minusOne);
    expect(new Set([minusOne, minusTwo, one]).size).toBe(3);
  });
});

