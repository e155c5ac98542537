/**
 * Times each kind of kernel of one batched prefill on a real GGUF (default: the store's SmolLM2): the whole batch,
 * then the batch with only one kernel kind's dispatches, repeated (the numbers they compute are then meaningless; the
 * time is what counts). Not a test. Run: node node_modules/vite-node/vite-node.mjs test/webgpu/measure-prefill-kernels.ts [path] [batch]
 */
import { openGpuDevice } from "../../src/engine/backends/webgpu/device.js";
import { openGgufTensors } from "../../src/engine/backends/webgpu/gguf/read-tensors.js";
import { readLlamaConfig } from "../../src/engine/backends/webgpu/model/llama-config.js";
import { DecodePlan } from "../../src/engine/backends/webgpu/plan/decode.js";
import { uploadDecodeWeights } from "../../src/engine/backends/webgpu/plan/decode-weights.js";
import { WeightArena } from "../../src/engine/backends/webgpu/plan/weight-arena.js";
import { realModelPath } from "../helpers/real-model.js";

const [pathArg, batchArg] = process.argv.slice(2);
const batch = Number(batchArg ?? 64);
const gpu = await openGpuDevice();
const file = await openGgufTensors(pathArg || realModelPath());
const config = readLlamaConfig(file.header);
const weights = await uploadDecodeWeights(file, config, new WeightArena(gpu.device));
const plan = new DecodePlan(gpu, config, weights, 1024, { prefillBatch: batch });
const prefill = (plan as unknown as { batched: { list: { pipeline: GPUComputePipeline }[] } }).batched;
const all = [...prefill.list];
const tokens = Array.from({ length: batch }, (_, i) => 100 + ((i * 37) % 1000));
const time = async (label: string) => {
  let wall = Infinity;
  let cpu = Infinity;
  for (let round = 0; round < 3; round++) {
    plan.reset();
    const t = performance.now();
    const usage = process.cpuUsage();
    await plan.prefill(tokens);
    wall = Math.min(wall, performance.now() - t);
    // CPU time of the process (llvmpipe's threads included): steadier than wall time on a shared machine.
    const { user, system } = process.cpuUsage(usage);
    cpu = Math.min(cpu, (user + system) / 1000);
  }
  console.log(`${label}: ${wall.toFixed(0)} ms wall, ${cpu.toFixed(0)} ms CPU per ${batch}-token batch (${prefill.list.length} dispatches)`);
};
await time("all");
for (const kind of [...new Set(all.map((d) => d.pipeline.label))]) {
  prefill.list.splice(0, prefill.list.length, ...all.filter((d) => d.pipeline.label === kind));
  await time(kind);
}
