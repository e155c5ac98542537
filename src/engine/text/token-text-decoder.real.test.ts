import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { getLlama, LlamaLogLevel, type LlamaModel, type Token } from "node-llama-cpp";
import { TokenTextDecoder } from "./token-text-decoder.js";

/** The shared helper lives outside src/ (tsc's rootDir); a computed specifier keeps tsc from compiling it. */
const realModelHelper = "../../../test/helpers/real-model.js";
const { realModelPath } = (await import(realModelHelper)) as { realModelPath: () => string };

describe("TokenTextDecoder on the default model's byte-level vocabulary", () => {
  let model: LlamaModel;
  const tokenize = (text: string) => model.tokenize(text) as number[];
  beforeAll(async () => {
    const llama = await getLlama({ build: "never", gpu: false, logLevel: LlamaLogLevel.error });
    model = await llama.loadModel({ modelPath: realModelPath(), vocabOnly: true });
  });
  afterAll(async () => model?.dispose());

  const decode = (tokens: number[]) => {
    const decoder = new TokenTextDecoder({ detokenize: (ids, special, context) => model.detokenize(ids as Token[], special, context as Token[]) });
    return tokens.map((token) => decoder.push(token)).join("") + decoder.flush();
  };

  it("emits characters that span tokens whole, never half", () => {
    const text = "Look 👀 at the 🌍";
    const tokens = tokenize(text);
    // The emoji are several byte tokens each in this vocabulary: the case the decoder exists for.
    expect(tokens.length).toBeGreaterThan(text.split(" ").length + 2);
    expect(decode(tokens)).toBe(text);
  });

  it("ends a reply cut inside a character at its last whole character", () => {
    const whole = tokenize("Hi 👀🌍");
    const lastEmoji = tokenize("Hi 👀").length;
    // Every cut inside the last emoji's bytes: the reply is what came before it, with no U+FFFD.
    for (let cut = lastEmoji + 1; cut < whole.length; cut++) {
      expect(decode(whole.slice(0, cut))).toBe("Hi 👀");
    }
    expect(whole.length).toBeGreaterThan(lastEmoji + 1);
  });
});
