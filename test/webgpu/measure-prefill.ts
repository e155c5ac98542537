/**
 * Times prompt evaluation of a real GGUF (default: the store's SmolLM2) with the WebGPU plan: batched prefill and
 * token by token, alternating, in one process, in wall and CPU time. Not a test: it times things.
 * Run: node node_modules/vite-node/vite-node.mjs test/webgpu/measure-prefill.ts [path] [tokens] [batch]
 */
import { openGpuDevice } from "../../src/engine/backends/webgpu/device.js";
import { openGgufTensors } from "../../src/engine/backends/webgpu/gguf/read-tensors.js";
import { readLlamaConfig } from "../../src/engine/backends/webgpu/model/llama-config.js";
import { DecodePlan } from "../../src/engine/backends/webgpu/plan/decode.js";
import { uploadDecodeWeights } from "../../src/engine/backends/webgpu/plan/decode-weights.js";
import { WeightArena } from "../../src/engine/backends/webgpu/plan/weight-arena.js";
import { realModelPath } from "../helpers/real-model.js";

const [pathArg, countArg, batchArg] = process.argv.slice(2);
const path = pathArg || realModelPath();
const count = Number(countArg ?? 96);
const gpu = await openGpuDevice();
const file = await openGgufTensors(path);
const config = readLlamaConfig(file.header);
const arena = new WeightArena(gpu.device);
const weights = await uploadDecodeWeights(file, config, arena);
const batched = new DecodePlan(gpu, config, weights, 512, { prefillBatch: Number(batchArg ?? 64) });
const stepwise = new DecodePlan(gpu, config, weights, 512, { prefillBatch: 1 });
const tokens = Array.from({ length: count }, (_, i) => 100 + ((i * 37) % 1000));
for (let round = 0; round < 3; round++) {
  for (const [name, plan] of [["batched", batched], ["token by token", stepwise]] as const) {
    plan.reset();
    const t = performance.now();
    const cpu = process.cpuUsage();
    await plan.prefill(tokens);
    const ms = performance.now() - t;
    // CPU time of the whole process (llvmpipe's threads included): steadier than wall time on a loaded machine.
    const { user, system } = process.cpuUsage(cpu);
    console.log(`round ${round} ${name}: ${count} tokens in ${ms.toFixed(0)} ms (${((count * 1000) / ms).toFixed(1)} tok/s), CPU ${((user + system) / 1000).toFixed(0)} ms`);
  }
}
