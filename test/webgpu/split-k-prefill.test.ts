/**
 * The default model (SmolLM2-135M-Instruct) with the plan a real GPU gets (split-K prefill GEMMs, prefill attention
 * with a workgroup per head and token; run here on the machine's adapter) against the plan of the adapter itself (on llvmpipe: the portable windowed GEMMs): both
 * evaluate the same prompt in batches of 16 (a partial last batch, partial token tiles), then decode greedily from
 * their own KV caches. Both compute in f32 and differ only in summation order, so the continuations must be the same
 * and the first logits nearly so.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { LlamaModel, Token } from "node-llama-cpp";
import { DecodePlan } from "../../src/engine/backends/webgpu/plan/decode.js";
import { asRealGpu, greedyContinuation, openDefaultModelOnGpu, relativeLogitGap, webGpuAvailable } from "../helpers/webgpu.js";

const GENERATED = 16;
const PROMPT = "<|im_start|>user\nExplain in three short sentences why the sky is blue during the day, why sunsets are red and orange, and why clouds look white or grey.<|im_end|>\n<|im_start|>assistant\n";
/** Largest |Δ logit| between the plans, relative to the largest |logit|: f32 rounding, not a different result. */
const LOGIT_TOLERANCE = 1e-4;

const available = await webGpuAvailable();
let opened: Awaited<ReturnType<typeof openDefaultModelOnGpu>>;
let vocab: LlamaModel;
let portable: DecodePlan;
let splitK: DecodePlan;

beforeAll(async () => {
  if (!available) return;
  opened = await openDefaultModelOnGpu();
  const { gpu, config, weights } = opened;
  vocab = opened.vocab;
  portable = new DecodePlan(gpu, config, weights, 256, { prefillBatch: 16 });
  splitK = new DecodePlan(asRealGpu(gpu), config, weights, 256, { prefillBatch: 16 });
});
afterAll(async () => {
  portable?.destroy();
  splitK?.destroy();
  await opened?.dispose();
});

describe.skipIf(!available)("prompt evaluation with split-K GEMMs (a real GPU's plan) on the default model", () => {
  it("continues a prompt as the portable plan does", async () => {
    const prompt = vocab.tokenize(PROMPT, true);
    expect(prompt.length).toBeGreaterThan(32); // three batches of 16, the last one partial
    const expected = await greedyContinuation(portable, prompt, GENERATED);
    const actual = await greedyContinuation(splitK, prompt, GENERATED);
    console.info("split-K continuation:", JSON.stringify(vocab.detokenize(actual.tokens as Token[])));
    expect(actual.tokens).toEqual(expected.tokens);
    expect(relativeLogitGap(expected.logits, actual.logits)).toBeLessThanOrEqual(LOGIT_TOLERANCE);
  }, 300_000);
});
