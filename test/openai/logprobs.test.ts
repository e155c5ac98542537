/**
 * Logprobs as OpenAI and vLLM report them, with the real default model through the openai SDK: the model's own
 * distribution (the log-softmax of its logits) whatever temperature and top_p sample from, on chat completions and
 * the Responses API; and legacy completions' `top_logprobs`, which always hold the token itself (up to logprobs + 1
 * entries), for generated and echoed prompt tokens alike.
 */
import type OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkRecordedStreams } from "../helpers/openai-stream.js";
import { MODEL_ID, startOpenAITestServer, type OpenAITestServer } from "../helpers/openai-server.js";

let kiln: OpenAITestServer;
beforeAll(async () => { kiln = await startOpenAITestServer(); });
afterAll(async () => {
  expect(await checkRecordedStreams(kiln.recorder)).toEqual([]);
  await kiln?.close();
});

const ask = [{ role: "user" as const, content: "Name a colour." }];
// top_p 0.05 keeps only the most likely token at each step: the same tokens as greedy decoding, from a distribution
// that, once truncated, would leave that token alone with probability 1.
const narrow = { temperature: 1, top_p: 0.05, seed: 1 };

describe("logprobs", { timeout: 300_000 }, () => {
  it("describe the model's own distribution on chat completions, whatever temperature and top_p sample from", async () => {
    const logprobsOf = async (sampling: object) => (await kiln.client.chat.completions.create({ model: MODEL_ID, messages: ask, max_tokens: 4, logprobs: true, top_logprobs: 3, ...sampling })).choices[0]!.logprobs!.content!;
    const greedy = await logprobsOf({ temperature: 0 });
    const sampled = await logprobsOf(narrow);
    expect(sampled.map((token) => token.token)).toEqual(greedy.map((token) => token.token));
    sampled.forEach((token, i) => {
      expect(token.logprob).toBeCloseTo(greedy[i]!.logprob, 3);
      expect(token.top_logprobs.map((top) => top.token)).toEqual(greedy[i]!.top_logprobs.map((top) => top.token));
      expect(token.top_logprobs).toHaveLength(3);
    });
    // The model's distribution is spread over several tokens: the best of them is not certain.
    expect(greedy[0]!.logprob).toBeLessThan(0);
  });

  it("describe the model's own distribution on the Responses API", async () => {
    const include = ["message.output_text.logprobs" as const];
    const logprobsOf = async (sampling: object) => {
      const response = await kiln.client.responses.create({ model: MODEL_ID, input: "Name a colour.", max_output_tokens: 4, include, top_logprobs: 2, ...sampling });
      return ((response.output[0] as OpenAI.Responses.ResponseOutputMessage).content[0] as OpenAI.Responses.ResponseOutputText).logprobs!;
    };
    const greedy = await logprobsOf({ temperature: 0 });
    const sampled = await logprobsOf({ temperature: narrow.temperature, top_p: narrow.top_p });
    expect(sampled.map((token) => token.token)).toEqual(greedy.map((token) => token.token));
    sampled.forEach((token, i) => {
      expect(token.logprob).toBeCloseTo(greedy[i]!.logprob, 3);
      expect(token.top_logprobs).toHaveLength(2);
    });
  });

  it("hold the sampled token in legacy completions' top_logprobs, even with logprobs 0", async () => {
    for (const logprobs of [0, 2]) {
      const data = await kiln.client.completions.create({ model: MODEL_ID, prompt: "One, two,", max_tokens: 4, logprobs, ...narrow });
      const { tokens, token_logprobs, top_logprobs } = data.choices[0]!.logprobs!;
      tokens!.forEach((token, i) => {
        const top = top_logprobs![i]!;
        expect(top[token], `${logprobs}: ${token}`).toBeCloseTo(token_logprobs![i]!, 5);
        expect(Object.keys(top).length).toBeGreaterThanOrEqual(Math.max(1, logprobs));
        expect(Object.keys(top).length).toBeLessThanOrEqual(logprobs + 1);
      });
    }
  });

  it("hold each echoed prompt token in its top_logprobs, after the first, which has none", async () => {
    const data = await kiln.client.completions.create({ model: MODEL_ID, prompt: "The quick brown fox jumps", max_tokens: 1, logprobs: 1, echo: true, temperature: 0 });
    const { tokens, token_logprobs, top_logprobs } = data.choices[0]!.logprobs!;
    expect([token_logprobs![0], top_logprobs![0]]).toEqual([null, null]);
    for (let i = 1; i < tokens!.length; i++) {
      expect(top_logprobs![i]![tokens![i]!], tokens![i]).toBeCloseTo(token_logprobs![i]!, 5);
      expect(Object.keys(top_logprobs![i]!).length).toBeLessThanOrEqual(2);
    }
    // Some prompt token is not the model's first choice: its entry stands beside the best alternative.
    expect(top_logprobs!.slice(1).some((top) => Object.keys(top!).length === 2)).toBe(true);
  });
});
