/**
 * `npm run bench:webgpu -- --clients`: the WebGPU backend serving 1, 2, 4 and 8 requests at once in one engine
 * (`parallel` 8), in-process: aggregate generated tokens/s from the first request's start to the last one's end, and
 * how many sequences each decode step carried. With BENCH_WEBGPU_BASELINE (the dist folder of an earlier build) its
 * engine runs the same levels in the same run, alternated level by level, so the ratio is a same-run figure.
 * Env: BENCH_MODEL_PATH (default: the store's default model), BENCH_GENERATE (tokens per request, default 64),
 * BENCH_CLIENTS (default "1,2,4,8"), ROUNDS (default 2), BENCH_TAG (suffix of the result files).
 */
import { hostname, loadavg } from "node:os";
import { basename } from "node:path";
import { readSettings } from "./lib/config.js";
import { describeMachine } from "./lib/machine.js";
import { makeProse } from "./lib/prompts.js";
import { median, ratio, round } from "./lib/stats.js";
import { writeWebGpuResult } from "./webgpu-results.js";

const settings = readSettings();
const rounds = Number(process.env.ROUNDS ?? 2);
const generate = Number(process.env.BENCH_GENERATE ?? 64);
const levels = (process.env.BENCH_CLIENTS ?? "1,2,4,8").split(",").map(Number);
const most = Math.max(...levels);
const log = (line) => console.error(`[bench webgpu clients ${new Date().toISOString().slice(11, 19)}] ${line}`);

const { createEngine } = await import("../dist/engine/index.js");
const baselineDist = process.env.BENCH_WEBGPU_BASELINE;
const baseline = baselineDist ? await import(`${baselineDist.replace(/\/$/, "")}/engine/index.js`) : undefined;
const load = (create) => create({ models: [{ id: "m", path: settings.modelPath, backend: "webgpu" }], parallel: most, ctxSize: 1024, prefixCache: false });
const request = (text) => ({ model: "m", messages: [{ role: "user", parts: [{ type: "text", text }] }], maxTokens: generate, sampling: { temperature: 0 } });

/** `clients` requests at once, each with its own prompt: generated tokens ÷ wall time, and the slowest TTFT. */
async function level(engine, clients, seed) {
  const t0 = performance.now();
  const runs = Array.from({ length: clients }, async (_, c) => {
    let tokens = 0;
    let first;
    for await (const event of engine.generate(request(`Write a long story that begins with these words: ${makeProse(seed * 100 + c, 24)}`))) {
      if (event.type === "text-delta") {
        first ??= performance.now() - t0;
        tokens++;
      }
    }
    return { tokens, first };
  });
  const results = await Promise.all(runs);
  const seconds = (performance.now() - t0) / 1000;
  const tokens = results.reduce((n, r) => n + r.tokens, 0);
  return { clients, tokens, seconds: round(seconds, 2), tokensPerSecond: round(tokens / seconds), slowestFirstMs: Math.round(Math.max(...results.map((r) => r.first))) };
}

const started = new Date();
const machine = describeMachine();
const engines = { webgpu: await load(createEngine) };
if (baseline) engines["webgpu-baseline"] = await load(baseline.createEngine);
const adapter = engines.webgpu.listModels()[0].details;
log(`webgpu adapter ${adapter.adapter} (${adapter.gpuBackend}, ${adapter.tier}), parallel ${most}`);
// Warm-up: llvmpipe compiles each shader on its first dispatch; a batch of `most` sequences compiles the batch kernels.
for (const engine of Object.values(engines)) await level(engine, most, 0);
const samples = Object.fromEntries(Object.keys(engines).map((side) => [side, Object.fromEntries(levels.map((n) => [n, []]))]));
try {
  for (let r = 0; r < rounds; r++) {
    for (const clients of levels) {
      for (const side of Object.keys(engines)) {
        const result = await level(engines[side], clients, 1 + r * 10 + clients);
        samples[side][clients].push(result);
        log(`round ${r} ${side}, ${clients} clients: ${result.tokens} tokens in ${result.seconds} s, ${result.tokensPerSecond} tok/s, slowest first token ${result.slowestFirstMs} ms`);
      }
    }
  }
} finally {
  await Promise.all(Object.values(engines).map((engine) => engine.close()));
}

const summary = Object.fromEntries(Object.entries(samples).map(([side, byLevel]) => [side, Object.fromEntries(levels.map((n) => [n, round(median(byLevel[n].map((s) => s.tokensPerSecond)))]))]));
const overOne = (side, n) => ratio(summary[side][n], summary[side][levels[0]]);
const result = { date: started.toISOString(), machine, rounds, generateTokens: generate, levels, adapter, loadAverage: loadavg(), summary, samples, baselineDist };
const markdown = [
  `# kiln WebGPU backend, concurrent requests — ${result.date} on ${hostname()}`,
  "",
  `Machine: ${machine.cpu.model}, ${machine.logicalCpus} logical CPUs; load average at the start ${machine.loadAverageAtStart.join(" / ")}, at the end ${loadavg().map((l) => l.toFixed(2)).join(" / ")}. WebGPU adapter: ${adapter.adapter} through ${adapter.gpuBackend} (${adapter.tier} tier${adapter.softwareAdapter ? ", a software renderer on the CPU" : ""}).`,
  `Model ${basename(settings.modelPath)}, one engine with parallel ${most}, greedy, ${generate} tokens per request, each request its own ~40-token prompt, no prefix cache; median of ${rounds} rounds, sides alternated level by level.`,
  "",
  `| clients | ${Object.keys(engines).map((side) => `${side} tok/s | ÷ 1 client`).join(" | ")} |${baseline ? " this build ÷ baseline |" : ""}`,
  `| --- | ${Object.keys(engines).map(() => "--- | ---").join(" | ")} |${baseline ? " --- |" : ""}`,
  ...levels.map((n) => `| ${n} | ${Object.keys(engines).map((side) => `${summary[side][n]} | ${overOne(side, n)}`).join(" | ")} |${baseline ? ` ${ratio(summary.webgpu[n], summary["webgpu-baseline"][n])} |` : ""}`),
  "",
].join("\n");
writeWebGpuResult("-clients", settings.modelPath, started, result, markdown);
console.log(markdown);
