/**
 * Decodes a few tokens of a real GGUF (default: the store's SmolLM2) with the WebGPU decode plan and prints
 * timings, then checks the first steps against the f64 JS reference. Not a test: it is slow and times things.
 * Run: node node_modules/vite-node/vite-node.mjs test/webgpu/measure-decode.ts [path] [tokens] [--unfused-norm] [--kv-f16] [--no-check]
 */
import { openGpuDevice } from "../../src/engine/backends/webgpu/device.js";
import { openGgufTensors } from "../../src/engine/backends/webgpu/gguf/read-tensors.js";
import { typeName } from "../../src/engine/backends/webgpu/gguf/quant-types.js";
import { readLlamaConfig } from "../../src/engine/backends/webgpu/model/llama-config.js";
import { DecodePlan } from "../../src/engine/backends/webgpu/plan/decode.js";
import { uploadDecodeWeights } from "../../src/engine/backends/webgpu/plan/decode-weights.js";
import { WeightArena } from "../../src/engine/backends/webgpu/plan/weight-arena.js";
import { realModelPath } from "../helpers/real-model.js";
import { argmax, createReferenceSession, loadReferenceModel } from "../helpers/webgpu-reference.js";

const flags = new Set(process.argv.slice(2).filter((a) => a.startsWith("--")));
const [pathArg, countArg] = process.argv.slice(2).filter((a) => !a.startsWith("--"));
const path = pathArg || realModelPath();
const count = Number(countArg ?? 16);
const gpu = await openGpuDevice();
const file = await openGgufTensors(path);
const config = readLlamaConfig(file.header);
let t = performance.now();
const arena = new WeightArena(gpu.device);
const weights = await uploadDecodeWeights(file, config, arena);
console.log(`upload ${(performance.now() - t).toFixed(0)} ms, ${(arena.bytes / 2 ** 20).toFixed(1)} MiB, layer type ${typeName(weights.layers[0]!.o.type)}, head ${typeName(weights.output[0]!.type)}`);
t = performance.now();
const plan = new DecodePlan(gpu, config, weights, 256, { ...(flags.has("--unfused-norm") && { fuseNorm: false }), kvCache: flags.has("--kv-f16") ? "f16" : "f32" });
console.log(`plan ${(performance.now() - t).toFixed(0)} ms, ${plan.dispatchCount} dispatches per token`);
t = performance.now();
const prompt = [config.bosTokenId ?? 1, 504, 3458, 282];
const first = await plan.step(prompt[0]);
console.log(`first step ${(performance.now() - t).toFixed(0)} ms`);
for (const token of prompt.slice(1)) await plan.step(token);
t = performance.now();
// CPU time of the whole process (llvmpipe's threads included): the work per token, less bent by a busy machine.
const cpu = process.cpuUsage();
const generated: number[] = [];
for (let i = 0; i < count; i++) generated.push((await plan.step()).token);
const ms = (performance.now() - t) / count;
const { user, system } = process.cpuUsage(cpu);
console.log(`decode ${ms.toFixed(1)} ms/token (${(1000 / ms).toFixed(1)} tok/s), CPU ${((user + system) / 1000 / count).toFixed(1)} ms/token, over ${count} tokens; first id ${first.token}; ids ${generated.join(" ")}`);

plan.reset();
for (const token of prompt) await plan.step(token);
t = performance.now();
const ahead = [...(await plan.runAhead(8)), ...(await plan.runAhead(8))].slice(0, count);
const aheadMs = (performance.now() - t) / 16;
console.log(`run-ahead ${aheadMs.toFixed(1)} ms/token; same ids as step-by-step: ${ahead.join(" ") === generated.slice(0, 16).join(" ")}`);
if (flags.has("--no-check")) process.exit(0);
// Check the first steps of a fresh sequence against the f64 reference (teacher-forced on the prompt).
const reference = await loadReferenceModel(path);
const session = createReferenceSession(reference);
plan.reset();
for (const token of prompt) {
  const gpuStep = await plan.step(token, { logits: true, residuals: true });
  const ref = session.step(token);
  const rel = gpuStep.residuals!.map((layer, l) => {
    const r = ref.residuals[l]!;
    let diff = 0, norm = 0;
    r.forEach((v, k) => ((diff += (layer[k]! - v) ** 2), (norm += v * v)));
    return Math.sqrt(diff / norm);
  });
  let worst = 0;
  ref.logits.forEach((v, k) => (worst = Math.max(worst, Math.abs(gpuStep.logits![k]! - v))));
  const maxLogit = Math.max(...ref.logits.map(Math.abs));
  console.log(`token ${token}: gpu argmax ${gpuStep.token} ref ${argmax(ref.logits)}; worst layer rel L2 ${Math.max(...rel).toExponential(2)}; logits max|Δ| ${(worst / maxLogit).toExponential(2)}·max|logit|`);
}
plan.destroy();
arena.destroy();
gpu.destroy();
