/**
 * The float64 reference forward pass against llama.cpp (through node-llama-cpp) on generated llama fixtures:
 * llama.cpp decodes 32 greedy tokens, then the reference is teacher-forced on that sequence and its argmax must
 * match llama.cpp's pick at each position, and its logits must stay close. This settles RoPE pairing, GQA, the
 * norms and tied embeddings. llama.cpp rounds on purpose (f16 KV cache; int8 activations for quantized weights),
 * so the reference also runs with that rounding emulated (LLAMA_CPP_CPU) to show the remaining gap is rounding.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Llama, LlamaModel, Token } from "node-llama-cpp";
import { testThreads } from "../helpers/real-model.js";
import { writeTinyGguf, type TinyGgufOptions } from "../helpers/tiny-gguf.js";
import { LLAMA_CPP_CPU, type GgmlParity } from "../helpers/ggml-parity.js";
import { argmax, loadReferenceModel, runReference, softmax, type ReferenceModel } from "../helpers/webgpu-reference.js";

const GENERATED = 32;
const MARGIN = 1e-3;
/** Weights large enough that attention (and so RoPE and GQA) moves the logits; wide LM-head margins. */
const SHARP: TinyGgufOptions = { weightScale: 0.3, outputScale: 1, randomNorms: true };
const PROMPT = "<|im_start|>user\nTell me about the sea<|im_end|>\n<|im_start|>assistant\n";

/** How the reference did against llama.cpp on one fixture. */
interface Agreement {
  positions: number;
  agreeing: number;
  /** Positions where llama.cpp's top-2 probability margin exceeds MARGIN, and how many of those agree. */
  decisive: number;
  decisiveAgreeing: number;
  /** Largest |Δ logit| relative to the largest |logit|, and largest |Δ probability|, over all positions. */
  logitError: number;
  probabilityError: number;
}

let llama: Llama;
let dir: string;

beforeAll(async () => {
  const { getLlama } = await import("node-llama-cpp");
  llama = await getLlama({ build: "never", gpu: false });
  dir = await mkdtemp(join(tmpdir(), "kiln-reference-"));
});
afterAll(async () => {
  await llama?.dispose();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** llama.cpp's greedy continuation of PROMPT, with its raw logits before each generated token. */
async function decodeWithLlamaCpp(model: LlamaModel, vocab: number): Promise<{ tokens: Token[]; promptLength: number; logits: Float64Array[] }> {
  // Flash attention off: llama.cpp's CPU flash attention sums V in f16, a rounding the parity mode does not model.
  const context = await model.createContext({ contextSize: 128, threads: testThreads(), sequences: 1, flashAttention: false });
  try {
    const sequence = context.getSequence();
    const tokens = model.tokenize(PROMPT, true);
    const promptLength = tokens.length;
    const logits: Float64Array[] = [];
    let input: Parameters<typeof sequence.controlledEvaluate>[0] = [...tokens.slice(0, -1), [tokens.at(-1)!, { generateNext: { logits: true } }]];
    while (logits.length < GENERATED) {
      const results = await sequence.controlledEvaluate(input);
      const map = results.at(-1)?.next.logits;
      if (!map) throw new Error("llama.cpp returned no logits");
      const row = new Float64Array(vocab).fill(-Infinity);
      for (const [token, value] of map) row[token] = value;
      logits.push(row);
      const next = argmax(row) as Token;
      tokens.push(next);
      input = [[next, { generateNext: { logits: true } }]];
    }
    return { tokens, promptLength, logits };
  } finally {
    await context.dispose();
  }
}

/** llama.cpp's greedy run on a fixture, and the reference teacher-forced on it, exact and with parity rounding. */
async function compareOn(name: string, options: TinyGgufOptions): Promise<{ exact: Agreement; parity: Agreement }> {
  const path = await writeTinyGguf(join(dir, `${name}.gguf`), 3, options);
  const reference = await loadReferenceModel(path);
  const model = await llama.loadModel({ modelPath: path });
  const run = await decodeWithLlamaCpp(model, reference.config.vocabSize).finally(() => model.dispose());
  const exact = agreementOf(reference, run, {});
  const parity = agreementOf(reference, run, LLAMA_CPP_CPU);
  console.info(`reference vs llama.cpp, ${name}:`, JSON.stringify({ exact, parity }));
  return { exact, parity };
}

function agreementOf(reference: ReferenceModel, run: { tokens: Token[]; promptLength: number; logits: Float64Array[] }, parity: GgmlParity): Agreement {
  const { tokens, promptLength, logits } = run;
  const steps = runReference(reference, tokens.slice(0, -1), parity);
  const result: Agreement = { positions: 0, agreeing: 0, decisive: 0, decisiveAgreeing: 0, logitError: 0, probabilityError: 0 };
  logits.forEach((theirs, i) => {
    const ours = steps[promptLength - 1 + i]!.logits;
    const agree = argmax(ours) === tokens[promptLength + i];
    const theirP = softmax(theirs);
    const [first, second] = [...theirP].sort((a, b) => b - a);
    result.positions++;
    if (agree) result.agreeing++;
    if (first! - second! > MARGIN) {
      result.decisive++;
      if (agree) result.decisiveAgreeing++;
    }
    const scale = Math.max(...theirs.map(Math.abs));
    const ourP = softmax(ours);
    theirP.forEach((p, t) => {
      result.logitError = Math.max(result.logitError, Math.abs(ours[t]! - theirs[t]!) / scale);
      result.probabilityError = Math.max(result.probabilityError, Math.abs(ourP[t]! - p));
    });
  });
  return result;
}

describe("the f64 reference forward pass against llama.cpp, teacher-forced on its greedy tokens", () => {
  it("agrees at every position on an F32 fixture, with logits within llama.cpp's f16-cache rounding", async () => {
    const { exact, parity } = await compareOn("f32", { ...SHARP, type: "f32" });
    expect(exact.positions).toBe(GENERATED);
    expect(exact.agreeing).toBe(GENERATED);
    expect(exact.logitError).toBeLessThan(2e-3);
    expect(parity.logitError).toBeLessThan(2e-4);
  });

  it("agrees at every position on an F32 fixture with tied embeddings (no output.weight)", async () => {
    const { exact, parity } = await compareOn("f32-tied", { ...SHARP, type: "f32", tied: true });
    expect(exact.agreeing).toBe(GENERATED);
    expect(exact.logitError).toBeLessThan(2e-3);
    expect(parity.logitError).toBeLessThan(2e-4);
  });

  it("agrees at every position on an F32 qwen2 fixture (q/k/v biases, NEOX RoPE, θ = 1e6, ε = 1e-6)", async () => {
    const { exact, parity } = await compareOn("qwen2-f32", { ...SHARP, type: "f32", qwen2: true });
    expect(exact.agreeing).toBe(GENERATED);
    expect(exact.logitError).toBeLessThan(2e-3);
    expect(parity.logitError).toBeLessThan(2e-4);
  });

  it.each(["q8_0", "q4_1"] as const)("agrees at ≥ 98%% of decisive positions on a %s fixture once llama.cpp's int8 activations are emulated", async (type) => {
    const { exact, parity } = await compareOn(type, { ...SHARP, type });
    expect(parity.decisive).toBeGreaterThanOrEqual(GENERATED * 0.75);
    expect(parity.decisiveAgreeing / parity.decisive).toBeGreaterThanOrEqual(0.98);
    // Exact math differs from llama.cpp's int8 activations by a few % of the logits, enough to flip close calls.
    expect(exact.decisiveAgreeing / exact.decisive).toBeGreaterThanOrEqual(0.85);
    expect(exact.logitError).toBeLessThan(0.1);
  });

  it.each(["f16", "q4_0", "q5_0", "q5_1", "q4_k", "q5_k", "q6_k"] as const)("loads a %s fixture in llama.cpp the way the reference reads it", async (type) => {
    const shape = type.endsWith("_k") ? { embedding: 256, feedForward: 512 } : undefined; // K-quant rows are whole 256-blocks
    const { exact } = await compareOn(type, { ...SHARP, type, shape });
    expect(exact.decisive).toBeGreaterThanOrEqual(GENERATED * 0.75);
    expect(exact.decisiveAgreeing / exact.decisive).toBeGreaterThanOrEqual(0.85);
    expect(exact.logitError).toBeLessThan(0.1);
  });
});
