/**
 * The default model (SmolLM2-135M-Instruct) with the plan a real GPU with subgroups gets (split-K prefill GEMMs and
 * split-K decode GEMVs whose lanes are summed by subgroup shuffles), against the plan of the same adapter without
 * them (on Mesa's Vulkan renderer, lavapipe: the portable kernels): both evaluate a prompt in batches of 16, then
 * decode greedily. Both compute in f32 and differ only in summation order: the same continuation, nearly the same
 * logits. Skips where no adapter with fixed-size subgroups comes up (scripts/lavapipe.sh provides one).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { LlamaModel, Token } from "node-llama-cpp";
import { DecodePlan } from "../../src/engine/backends/webgpu/plan/decode.js";
import { openSubgroupDevice } from "../../src/engine/backends/webgpu/kernels/subgroup-device.fixture.js";
import { asRealGpu, greedyContinuation, openDefaultModelOnGpu, relativeLogitGap } from "../helpers/webgpu.js";

const GENERATED = 12;
const PROMPT = "<|im_start|>user\nWhy is the sky blue during the day and red at sunset? Answer in two sentences.<|im_end|>\n<|im_start|>assistant\n";
const LOGIT_TOLERANCE = 1e-4;

// Opened once here (the tests skip without it); openDefaultModelOnGpu's dispose destroys it.
const device = await openSubgroupDevice();
let opened: Awaited<ReturnType<typeof openDefaultModelOnGpu>>;
let vocab: LlamaModel;
let portable: DecodePlan;
let subgroups: DecodePlan;

beforeAll(async () => {
  if (!device) return;
  opened = await openDefaultModelOnGpu(async () => device);
  const { gpu, config, weights } = opened;
  vocab = opened.vocab;
  portable = new DecodePlan(gpu, config, weights, 256, { prefillBatch: 16 });
  subgroups = new DecodePlan(asRealGpu(gpu), config, weights, 256, { prefillBatch: 16 });
});
afterAll(async () => {
  portable?.destroy();
  subgroups?.destroy();
  await opened?.dispose();
});

describe.skipIf(!device)("a real GPU's plan summing lanes by subgroups, on the default model", () => {
  it("continues a prompt as the portable plan does", async () => {
    expect(opened.gpu.info.subgroupSize).toBeGreaterThan(1);
    const prompt = vocab.tokenize(PROMPT, true);
    expect(prompt.length).toBeGreaterThan(16);
    const expected = await greedyContinuation(portable, prompt, GENERATED);
    const actual = await greedyContinuation(subgroups, prompt, GENERATED);
    console.info("subgroup-summed continuation:", JSON.stringify(vocab.detokenize(actual.tokens as Token[])));
    expect(actual.tokens).toEqual(expected.tokens);
    expect(relativeLogitGap(expected.logits, actual.logits)).toBeLessThanOrEqual(LOGIT_TOLERANCE);
  }, 300_000);
});
