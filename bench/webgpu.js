/**
 * `npm run bench:webgpu`: the WebGPU backend next to the llama.cpp backend on the same machine and model, in one run
 * (sides alternate each round): prompt processing and generation tokens/s through kiln's engine in-process, and
 * the WebGPU decode plan's dispatches per token. A third side, WebGPU with prompts evaluated token by token (batched
 * prefill off), is the baseline of the batched prompt speed. Writes bench/results/<date>-<host>-webgpu[-model].{json,md}.
 * Env: BENCH_THREADS (llama.cpp threads; default all cores), ROUNDS (default 3; the first is not timed), BENCH_GENERATE (tokens, default 32),
 * BENCH_MODEL_PATH (default: the store's default model), BENCH_TAG (suffix of the result files), BENCH_WEBGPU_BASELINE (the dist folder of an earlier kiln build:
 * its WebGPU backend becomes a fourth side, "webgpu, baseline build", so a speed-up against that code is a same-run ratio).
 * `npm run bench:webgpu -- --profile` measures where a decode token's time goes instead (bench/webgpu-profile.js);
 * `-- --clients`, aggregate speed with 1–8 requests at once (bench/webgpu-clients.js).
 */
import { hostname, loadavg } from "node:os";
import { basename } from "node:path";
import { readSettings } from "./lib/config.js";
import { describeMachine } from "./lib/machine.js";
import { makeProse } from "./lib/prompts.js";
import { median, ratio, round } from "./lib/stats.js";
import { writeWebGpuResult } from "./webgpu-results.js";

if (process.argv.includes("--profile")) {
  await import("./webgpu-profile.js");
  process.exit(0);
}
if (process.argv.includes("--clients")) {
  await import("./webgpu-clients.js");
  process.exit(0);
}

const settings = readSettings();
const rounds = Number(process.env.ROUNDS ?? 3);
const generate = Number(process.env.BENCH_GENERATE ?? 32);
const promptWords = 80;
const log = (line) => console.error(`[bench webgpu ${new Date().toISOString().slice(11, 19)}] ${line}`);

const { createEngine } = await import("../dist/engine/index.js");
const baselineDist = process.env.BENCH_WEBGPU_BASELINE;
const baseline = baselineDist ? await import(`${baselineDist.replace(/\/$/, "")}/engine/index.js`) : undefined;
// No prefix cache on either side: every round evaluates its whole prompt.
const load = (backend, promptBatch, create = createEngine) => create({ models: [{ id: "m", path: settings.modelPath, backend }], parallel: 1, ctxSize: 1024, threads: settings.threads, prefixCache: false, promptBatch });
const request = (text, maxTokens) => ({ model: "m", messages: [{ role: "user", parts: [{ type: "text", text }] }], maxTokens, sampling: { temperature: 0 } });

/** Prompt tokens ÷ time to the first token, and tokens/s from the first token to the last. */
async function measure(engine, text) {
  const t0 = performance.now();
  let inputTokens = 0;
  const times = [];
  for await (const event of engine.generate(request(text, generate))) {
    if (event.type === "start") inputTokens = event.inputTokens - event.cachedInputTokens;
    if (event.type === "text-delta") times.push(performance.now());
  }
  return {
    promptTokensPerSecond: (inputTokens * 1000) / (times[0] - t0),
    generateTokensPerSecond: ((times.length - 1) * 1000) / (times.at(-1) - times[0]),
    inputTokens,
    outputTokens: times.length,
  };
}

const started = new Date();
const machine = describeMachine();
const engines = { "llama-cpp": await load("llama-cpp"), webgpu: await load("webgpu"), "webgpu-token-by-token": await load("webgpu", 1) };
if (baseline) engines["webgpu-baseline"] = await load("webgpu", undefined, baseline.createEngine);
const baselineDispatches = baseline && engines["webgpu-baseline"].listModels()[0].details?.dispatchesPerToken;
const adapter = engines.webgpu.listModels()[0].details;
log(`webgpu adapter ${adapter.adapter} (${adapter.gpuBackend}, ${adapter.tier}), ${adapter.dispatchesPerToken} dispatches per token`);
// A short warm-up request per side first: llvmpipe compiles each shader on its first dispatch, which is not speed.
for (const engine of Object.values(engines)) for await (const _ of engine.generate(request(`Warm up: ${makeProse(99, 12)}`, 2)));
const samples = Object.fromEntries(Object.keys(engines).map((side) => [side, []]));
try {
  for (let r = 0; r < rounds; r++) {
    // A fresh prompt each round, so no side reuses a cached prefix.
    const text = `Summarise this in one line: ${makeProse(100 + r, promptWords)}`;
    for (const side of Object.keys(engines)) {
      const result = await measure(engines[side], text);
      samples[side].push(result);
      log(`round ${r} ${side}: ${result.inputTokens} prompt tokens, prompt ${round(result.promptTokensPerSecond)} tok/s, generate ${round(result.generateTokensPerSecond)} tok/s (${result.outputTokens} tokens)`);
    }
  }
} finally {
  await Promise.all(Object.values(engines).map((engine) => engine.close()));
}

// The first round is not timed when there are more: on a GPU it can still pay for pipelines the warm-up's shapes did
// not create (llama.cpp on Vulkan evaluated an H100's first 123-token prompt at 15 tok/s, the next at 5,085).
const timed = (results) => (results.length > 1 ? results.slice(1) : results);
const summary = Object.fromEntries(Object.entries(samples).map(([side, results]) => [side, {
  promptTokensPerSecond: round(median(timed(results).map((r) => r.promptTokensPerSecond))),
  generateTokensPerSecond: round(median(timed(results).map((r) => r.generateTokensPerSecond))),
}]));
const result = {
  date: started.toISOString(), machine, threads: settings.threads, rounds, generateTokens: generate,
  adapter, loadAverage: loadavg(), summary, samples,
  ratios: {
    generate: ratio(summary.webgpu.generateTokensPerSecond, summary["llama-cpp"].generateTokensPerSecond),
    prompt: ratio(summary.webgpu.promptTokensPerSecond, summary["llama-cpp"].promptTokensPerSecond),
    batchedPrompt: ratio(summary.webgpu.promptTokensPerSecond, summary["webgpu-token-by-token"].promptTokensPerSecond),
    ...(baseline && { promptOverBaseline: ratio(summary.webgpu.promptTokensPerSecond, summary["webgpu-baseline"].promptTokensPerSecond),
      generateOverBaseline: ratio(summary.webgpu.generateTokensPerSecond, summary["webgpu-baseline"].generateTokensPerSecond) }),
  },
  baselineDist,
};
const markdown = [
  `# kiln WebGPU backend — ${result.date} on ${hostname()}`,
  "",
  `Machine: ${machine.cpu.model}, ${machine.logicalCpus} logical CPUs, ${machine.memoryGiB} GiB; load average at the start ${machine.loadAverageAtStart.join(" / ")}. WebGPU adapter: ${adapter.adapter} through ${adapter.gpuBackend} (${adapter.tier} tier${adapter.softwareAdapter ? ", a software renderer on the CPU" : ""}).`,
  `Model ${basename(settings.modelPath)}, greedy, a ${median(samples.webgpu.map((s) => s.inputTokens))}-token prompt, ${generate} generated tokens, median of ${rounds > 1 ? `rounds 2–${rounds} (the first is a warm-up)` : "1 round"}; llama.cpp with ${settings.threads} threads. Load average at the end: ${loadavg().map((l) => l.toFixed(2)).join(" / ")}.`,
  "",
  "| backend | prompt tok/s | generate tok/s | dispatches per token |",
  "| --- | --- | --- | --- |",
  `| llama-cpp | ${summary["llama-cpp"].promptTokensPerSecond} | ${summary["llama-cpp"].generateTokensPerSecond} | – |`,
  `| webgpu | ${summary.webgpu.promptTokensPerSecond} | ${summary.webgpu.generateTokensPerSecond} | ${adapter.dispatchesPerToken} |`,
  `| webgpu, prompt token by token | ${summary["webgpu-token-by-token"].promptTokensPerSecond} | ${summary["webgpu-token-by-token"].generateTokensPerSecond} | ${adapter.dispatchesPerToken} |`,
  ...(baseline ? [`| webgpu, baseline build | ${summary["webgpu-baseline"].promptTokensPerSecond} | ${summary["webgpu-baseline"].generateTokensPerSecond} | ${baselineDispatches ?? "?"} |`] : []),
  "",
  `WebGPU ÷ llama.cpp (same run): generation ${result.ratios.generate}, prompt ${result.ratios.prompt}. Batched prompt evaluation (${adapter.promptBatch} tokens per batch) ÷ token by token: ${result.ratios.batchedPrompt}.`
    + (baseline ? ` This build ÷ the baseline build (${baselineDist}): prompt ${result.ratios.promptOverBaseline}, generation ${result.ratios.generateOverBaseline}.` : ""),
  "",
].join("\n");
writeWebGpuResult("", settings.modelPath, started, result, markdown);
console.log(markdown);
