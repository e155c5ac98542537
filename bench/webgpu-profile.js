/**
 * `npm run bench:webgpu -- --profile`: where a WebGPU decode token's time goes, on the plan the engine would use for
 * this adapter. Per kernel class: GPU ms per token (timestamp queries when the adapter offers them, else each class
 * replayed alone); on the host: recording, submission and the wait for the sampled id. Then the same per kernel class
 * for one 64-token prompt chunk through the batch plan (BENCH_PROMPT_ROUNDS runs of it, default 4), and for one
 * decode step of BENCH_STEP_SEQUENCES sequences (default 8) through a batch plan holding that many, with that step's
 * wall time from submit to its ids read back (what a server's shared step takes, host included). Writes
 * bench/results/<date>-<host>-webgpu-profile[-model].{json,md}. On an adapter with fixed-size subgroups the chunk and
 * the step are also profiled with the kernels' lanes summed in workgroup memory instead (the plan of an adapter
 * without subgroups), in the same process, for a same-run ratio. Env: BENCH_MODEL_PATH (default: the store's default
 * model), BENCH_GENERATE (profiled tokens, default 16), BENCH_TAG (suffix of the result files), BENCH_AS_GPU=1 (plan
 * as for a GPU on a software renderer: a dry run of the GPU kernels, e.g. on Mesa's lavapipe).
 */
import { hostname, loadavg } from "node:os";
import { basename } from "node:path";
import { readSettings } from "./lib/config.js";
import { describeMachine } from "./lib/machine.js";
import { round } from "./lib/stats.js";
import { writeWebGpuResult } from "./webgpu-results.js";

const webgpu = "../dist/engine/backends/webgpu";
const { openGpuDevice } = await import(`${webgpu}/device.js`);
const { openGgufTensors } = await import(`${webgpu}/gguf/read-tensors.js`);
const { readLlamaConfig } = await import(`${webgpu}/model/llama-config.js`);
const { createTokenBatch, DecodePlan } = await import(`${webgpu}/plan/decode.js`);
const { createKvArena, destroyKvArena } = await import(`${webgpu}/plan/kv-arena.js`);
const { uploadDecodeWeights } = await import(`${webgpu}/plan/decode-weights.js`);
const { WeightArena } = await import(`${webgpu}/plan/weight-arena.js`);
const { profileDecode, profileBatch } = await import(`${webgpu}/plan/decode-profile.js`);

const settings = readSettings();
const tokens = Number(process.env.BENCH_GENERATE ?? 16);
const log = (line) => console.error(`[bench webgpu profile ${new Date().toISOString().slice(11, 19)}] ${line}`);

const started = new Date();
const machine = describeMachine();
const opened = await openGpuDevice();
// BENCH_AS_GPU: the plans a GPU gets, on whatever adapter this is.
const gpu = process.env.BENCH_AS_GPU === "1" ? Object.create(opened, { info: { value: { ...opened.info, software: false } } }) : opened;
/** The same device as an adapter without subgroups would plan for it (the workgroup-memory trees). */
const withoutSubgroups = (device) => Object.create(device, { info: { value: { ...device.info, subgroupSize: undefined } } });
const subgroupSize = gpu.info.software ? undefined : gpu.info.subgroupSize;
const file = await openGgufTensors(settings.modelPath);
const config = readLlamaConfig(file.header);
const arena = new WeightArena(gpu.device);
const weights = await uploadDecodeWeights(file, config, arena);
// The plan and the batch plan that evaluates its prompt, as a model of one sequence has them.
const kv = createKvArena(gpu.device, config, 1024, 1);
const batch = createTokenBatch(gpu, config, weights, kv, { batch: 64, decodeRows: 1 });
const plan = new DecodePlan(gpu, config, weights, 1024, {}, { arena: kv, batch, slot: 0 });
log(`${basename(settings.modelPath)} on ${gpu.info.device} (${gpu.info.backend}), ${plan.dispatchCount} dispatches per token`);
// A 64-token prompt, then two warm-up steps: llvmpipe compiles each pipeline on its first dispatch.
const prompt = Array.from({ length: 64 }, (_, i) => 100 + ((i * 37) % 500));
await plan.prefill(prompt.slice(0, -1));
await plan.step(prompt.at(-1));
await plan.step();
const profile = await profileDecode(gpu.device, plan, tokens);
// A 64-token chunk placed after everything decoded so far (the rounds overwrite the same positions).
const chunk = Array.from({ length: 64 }, (_, i) => 200 + ((i * 53) % 700));
const promptRounds = Number(process.env.BENCH_PROMPT_ROUNDS ?? 4);
const chunkPlaces = chunk.map((_, i) => [0, plan.position + i]);
const promptKernels = await profileBatch(gpu.device, batch, chunk, chunkPlaces, promptRounds);
let treeChunkKernels;
if (subgroupSize) {
  const tree = createTokenBatch(withoutSubgroups(gpu), config, weights, kv, { batch: 64, decodeRows: 1 });
  tree.submit(chunk, chunkPlaces); // its pipelines' first dispatch (llvmpipe compiles there)
  await gpu.device.queue.onSubmittedWorkDone();
  treeChunkKernels = await profileBatch(gpu.device, tree, chunk, chunkPlaces, promptRounds);
  tree.destroy();
}
plan.destroy();
batch.destroy();
destroyKvArena(kv);
// A decode step of several sequences, each 64 tokens deep in its own slot (what the step batcher runs for a server).
const sequences = Number(process.env.BENCH_STEP_SEQUENCES ?? 8);
const stepKv = createKvArena(gpu.device, config, 1024, sequences);
const stepBatch = createTokenBatch(gpu, config, weights, stepKv, { batch: 64, decodeRows: sequences });
const stepTokens = Array.from({ length: sequences }, (_, i) => 300 + i);
const stepPlaces = stepTokens.map((_, slot) => [slot, 64]);
const stepWallMs = [];
const stepHost = [];
for (let i = 0; i < promptRounds + 2; i++) {
  const t0 = performance.now();
  await stepBatch.decode(stepTokens, stepPlaces);
  if (i >= 2) stepWallMs.push(performance.now() - t0);
  if (i >= 2) stepHost.push(stepBatch.lastHostTimes);
}
const stepKernels = await profileBatch(gpu.device, stepBatch, stepTokens, stepPlaces, promptRounds, true);
stepBatch.destroy();
let treeStepKernels;
if (subgroupSize) {
  const tree = createTokenBatch(withoutSubgroups(gpu), config, weights, stepKv, { batch: 64, decodeRows: sequences });
  await tree.decode(stepTokens, stepPlaces);
  treeStepKernels = await profileBatch(gpu.device, tree, stepTokens, stepPlaces, promptRounds, true);
  tree.destroy();
}
destroyKvArena(stepKv);
arena.destroy();
opened.destroy();

const promptMs = promptKernels.reduce((sum, k) => sum + k.ms, 0);
const stepMs = stepKernels.reduce((sum, k) => sum + k.ms, 0);
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const stepWall = median(stepWallMs);
const stepHostMs = { encodeMs: median(stepHost.map((t) => t.encodeMs)), submitMs: median(stepHost.map((t) => t.submitMs)), waitMs: median(stepHost.map((t) => t.waitMs)) };
const result = { date: started.toISOString(), machine, model: basename(settings.modelPath), adapter: gpu.info.device, gpuBackend: gpu.info.backend, contextAtStart: prompt.length, loadAverageAtEnd: loadavg(), ...profile, promptChunk: { tokens: chunk.length, rounds: promptRounds, kernels: promptKernels }, decodeStep: { sequences, rounds: promptRounds, wallMsMedian: stepWall, host: stepHostMs, kernels: stepKernels }, ...(subgroupSize && { subgroupSize, withoutSubgroups: { promptChunk: treeChunkKernels, decodeStep: treeStepKernels } }) };
/** A table of GPU time per kernel class, per `unit` (token, chunk, step), with each class's share and the total. */
function kernelTable(unit, kernels) {
  const total = kernels.reduce((sum, k) => sum + k.ms, 0);
  return [
    `| kernel class | dispatches per ${unit} | ms per ${unit} | share |`,
    "| --- | --- | --- | --- |",
    ...kernels.map((k) => `| ${k.kind} | ${k.dispatches} | ${round(k.ms, 3)} | ${Math.round((100 * k.ms) / total)}% |`),
    `| all | ${kernels.reduce((n, k) => n + k.dispatches, 0)} | ${round(total, 3)} | 100% |`,
  ];
}
const markdown = [
  `# kiln WebGPU decode profile — ${result.date} on ${hostname()}`,
  "",
  `Machine: ${machine.cpu.model}, ${machine.logicalCpus} logical CPUs; load average at the start ${machine.loadAverageAtStart.join(" / ")}, at the end ${loadavg().map((l) => l.toFixed(2)).join(" / ")}.`,
  `Model ${result.model} on ${result.adapter} (${result.gpuBackend}), ${profile.dispatchesPerToken} dispatches per token, ${tokens} tokens decoded after a ${prompt.length}-token prompt. Kernel times by ${profile.method === "timestamp-query" ? "timestamp queries (one pass per dispatch)" : "replaying each class's dispatches alone, one submit per class (this adapter has no timestamp queries)"}.`,
  "",
  "| host, per token (median) | ms |",
  "| --- | --- |",
  `| recording the commands | ${round(profile.host.encodeMs, 3)} |`,
  `| submitting them | ${round(profile.host.submitMs, 3)} |`,
  `| waiting for the sampled id | ${round(profile.host.waitMs, 3)} |`,
  `| whole step | ${round(profile.host.stepMs, 3)} |`,
  "",
  ...kernelTable("token", profile.kernels),
  "",
  `A ${chunk.length}-token prompt chunk through the batch plan (mean of ${promptRounds} runs; ${round(promptMs / chunk.length, 3)} ms a token, ${Math.round((1000 * chunk.length) / promptMs)} tok/s of GPU time):`,
  "",
  ...kernelTable("chunk", promptKernels),
  "",
  `A decode step of ${sequences} sequences through the batch plan (mean of ${promptRounds} runs; ${round(stepMs, 3)} ms of GPU time, ${round(stepWall, 3)} ms from the call to the ids read back, median: ${round(stepHostMs.encodeMs, 3)} ms writing the inputs and recording the commands, ${round(stepHostMs.submitMs, 3)} ms submitting them, ${round(stepHostMs.waitMs, 3)} ms waiting for the ids):`,
  "",
  ...kernelTable("step", stepKernels),
  "",
  ...(subgroupSize ? subgroupTables() : []),
].join("\n");

/** Per kernel class, GPU ms with the lanes summed by subgroups (the plan above) and in workgroup memory, same run. */
function subgroupTables() {
  const table = (unit, withThem, without) => [
    `| kernel class | ms per ${unit}, subgroups | ms per ${unit}, workgroup memory | ratio |`,
    "| --- | --- | --- | --- |",
    ...withThem.map((k) => {
      const other = without.find((o) => o.kind === k.kind)?.ms ?? NaN;
      return `| ${k.kind} | ${round(k.ms, 3)} | ${round(other, 3)} | ${round(k.ms / other, 2)} |`;
    }),
    `| all | ${round(withThem.reduce((n, k) => n + k.ms, 0), 3)} | ${round(without.reduce((n, k) => n + k.ms, 0), 3)} | ${round(withThem.reduce((n, k) => n + k.ms, 0) / without.reduce((n, k) => n + k.ms, 0), 2)} |`,
  ];
  return [
    `Subgroups of ${subgroupSize} lanes: the same chunk and step with the lanes of the split-K kernels summed in workgroup memory (the plan without subgroups), same process:`,
    "",
    ...table("chunk", promptKernels, treeChunkKernels),
    "",
    ...table("step", stepKernels, treeStepKernels),
    "",
  ];
}
writeWebGpuResult("-profile", settings.modelPath, started, result, markdown);
console.log(markdown);
