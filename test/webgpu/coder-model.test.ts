/**
 * The WebGPU backend on the real coder model (Qwen2.5-Coder-0.5B-Instruct Q4_K_M: qwen2 with Q5_0, Q8_0, Q4_K and
 * Q6_K tensors) against llama.cpp on the same file and the same token ids. llama.cpp decodes 32 greedy tokens per
 * prompt; ours evaluates the prompt in batches, then is teacher-forced on that sequence, so each position is compared
 * on equal inputs. Two plans run: the adapter's own, and the plan a real GPU gets (split-K prefill GEMMs and its
 * attention kernels, run exactly if slowly on llvmpipe). llama.cpp's CPU path rounds activations to 8 bits before
 * quantized matmuls (ours keeps them f32), so the logits differ by that rounding, and a pick may differ only where
 * llama.cpp's top two logits are within NEAR_TIE of each other.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Llama, LlamaModel, Token } from "node-llama-cpp";
import { openGpuDevice, type GpuDevice } from "../../src/engine/backends/webgpu/device.js";
import { openGgufTensors } from "../../src/engine/backends/webgpu/gguf/read-tensors.js";
import { readLlamaConfig } from "../../src/engine/backends/webgpu/model/llama-config.js";
import { DecodePlan } from "../../src/engine/backends/webgpu/plan/decode.js";
import { uploadDecodeWeights } from "../../src/engine/backends/webgpu/plan/decode-weights.js";
import { WeightArena } from "../../src/engine/backends/webgpu/plan/weight-arena.js";
import { coderModelPath, testThreads } from "../helpers/real-model.js";
import { argmax } from "../helpers/webgpu-reference.js";
import { asRealGpu, webGpuAvailable } from "../helpers/webgpu.js";

const GENERATED = 32;
/** A pick may differ from llama.cpp's only where its top-2 logit gap is below this (8-bit activation rounding). */
const NEAR_TIE = 0.5;
/** Largest |Δ logit| allowed, relative to the largest |logit| of the step. */
const LOGIT_TOLERANCE = 0.05;
const chat = (text: string) => `<|im_start|>user\n${text}<|im_end|>\n<|im_start|>assistant\n`;
const PROMPTS = [chat("Write a Python function that checks whether a number is prime."), "// JavaScript: reverse a string\nfunction reverse(s) {"];

const path = coderModelPath();
const available = path !== undefined && (await webGpuAvailable());

let llama: Llama;
let model: LlamaModel;
let gpu: GpuDevice;
let arena: WeightArena;
/** The adapter's own plan, and the plan a real GPU gets (split-K prefill GEMMs), on the same weights. */
const plans = new Map<string, DecodePlan>();
let vocabSize: number;

beforeAll(async () => {
  if (!available) return;
  const { getLlama } = await import("node-llama-cpp");
  llama = await getLlama({ build: "never", gpu: false });
  model = await llama.loadModel({ modelPath: path! });
  gpu = await openGpuDevice();
  const file = await openGgufTensors(path!);
  const config = readLlamaConfig(file.header);
  vocabSize = config.vocabSize;
  arena = new WeightArena(gpu.device);
  const weights = await uploadDecodeWeights(file, config, arena);
  plans.set("the adapter's plan", new DecodePlan(gpu, config, weights, 128));
  plans.set("a real GPU's plan", new DecodePlan(asRealGpu(gpu), config, weights, 128));
});
afterAll(async () => {
  for (const plan of plans.values()) plan.destroy();
  arena?.destroy();
  gpu?.destroy();
  await model?.dispose();
  await llama?.dispose();
});

/** llama.cpp's greedy continuation, with its logits before each generated token. */
async function decodeWithLlamaCpp(prompt: Token[]): Promise<{ tokens: Token[]; logits: Float64Array[] }> {
  const context = await model.createContext({ contextSize: 128, threads: testThreads(), sequences: 1 });
  try {
    const sequence = context.getSequence();
    const tokens: Token[] = [];
    const logits: Float64Array[] = [];
    let input: Parameters<typeof sequence.controlledEvaluate>[0] = [...prompt.slice(0, -1), [prompt.at(-1)!, { generateNext: { logits: true } }]];
    while (tokens.length < GENERATED) {
      const map = (await sequence.controlledEvaluate(input)).at(-1)?.next.logits;
      if (!map) throw new Error("llama.cpp returned no logits");
      const row = new Float64Array(vocabSize).fill(-Infinity);
      for (const [token, value] of map) row[token] = value;
      logits.push(row);
      tokens.push(argmax(row) as Token);
      input = [[tokens.at(-1)!, { generateNext: { logits: true } }]];
    }
    return { tokens, logits };
  } finally {
    await context.dispose();
  }
}

describe.skipIf(!available)("the coder model on WebGPU against llama.cpp (same file, same token ids)", () => {
  // llama.cpp runs once per prompt; both plans are compared with that run.
  const llamaCppRuns = new Map<string, ReturnType<typeof decodeWithLlamaCpp>>();
  const cases = PROMPTS.flatMap((p, i) => ["the adapter's plan", "a real GPU's plan"].map((name) => [i, name, p] as const));
  it.each(cases)("prompt %i, %s: the same greedy tokens, logits within tolerance", async (_, name, text) => {
    const prompt = model.tokenize(text, true);
    if (!llamaCppRuns.has(text)) llamaCppRuns.set(text, decodeWithLlamaCpp(prompt));
    const theirs = await llamaCppRuns.get(text)!;
    const plan = plans.get(name)!;
    plan.reset();
    await plan.prefill(prompt.slice(0, -1)); // batched prompt evaluation
    let input: number = prompt.at(-1)!;
    const stats = { positions: 0, agreeing: 0, nearTies: 0, worstLogit: 0 };
    for (let i = 0; i < GENERATED; i++) {
      const logits = (await plan.step(input, { logits: true })).logits!;
      const expected = theirs.logits[i]!;
      const [first, second] = [...expected].sort((a, b) => b - a);
      let scale = 0;
      let worst = 0;
      expected.forEach((v, t) => ((scale = Math.max(scale, Math.abs(v))), (worst = Math.max(worst, Math.abs(logits[t]! - v)))));
      stats.worstLogit = Math.max(stats.worstLogit, worst / scale);
      stats.positions++;
      if (argmax(logits) === theirs.tokens[i]) stats.agreeing++;
      else if (first! - second! < NEAR_TIE) stats.nearTies++;
      input = theirs.tokens[i]!;
    }
    console.info(`coder model (${name}) vs llama.cpp, prompt ${JSON.stringify(text.slice(0, 40))}:`, JSON.stringify(stats), JSON.stringify(model.detokenize(theirs.tokens)));
    expect(stats.agreeing + stats.nearTies).toBe(GENERATED);
    expect(stats.worstLogit).toBeLessThanOrEqual(LOGIT_TOLERANCE);
  }, 300_000);
});
