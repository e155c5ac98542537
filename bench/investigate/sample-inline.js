/**
 * Does sampling every step on the calling thread pay for a model on the CPU (step-sampler.ts)? In one process,
 * alternating sides every round, two copies of the same model generate: one sampling every step inline (the CPU's
 * default), one handing large steps to libuv's threads (the default off the CPU). Per side and level: tokens/s after
 * each request's first token, and the step clock's host and compute milliseconds per step (seeded sampling, 128
 * tokens a request, all requests at once).
 * Usage: npm run build && node bench/investigate/sample-inline.js   (env: BENCH_MODEL(_PATH), BENCH_THREADS, LEVELS, ROUNDS)
 */
import { loadLlamaCppModel } from "../../dist/engine/backends/llama-cpp/llama-cpp-model.js";
import { openLlama } from "../../dist/engine/backends/llama-cpp/load-llama.js";
import { readSettings } from "../lib/config.js";
import { describeMachine } from "../lib/machine.js";

const settings = readSettings();
const levels = (process.env.LEVELS ?? "4,8,16").split(",").map(Number);
const rounds = Number(process.env.ROUNDS ?? 3);
const llama = await openLlama(false);
const load = (stepSampler) => loadLlamaCppModel({
  id: "m", path: settings.modelPath, llama, parallel: Math.max(...levels), ctxSize: 1024, threads: settings.threads, prefixCache: false, stepSampler,
});
const sides = { "every step inline": await load(true), "large steps in work items": await load("small-steps") };
let seed = 0;
const request = () => ({ model: "m", prompt: `Story ${seed}: once upon a time in a kiln,`, maxTokens: 128, sampling: { temperature: 0.8, seed: ++seed } });
const fixed = (values, digits) => values.map((v) => v.toFixed(digits)).join(", ");
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

const machine = describeMachine();
console.log(`${machine.cpu.model}, ${settings.threads} threads, load average ${machine.loadAverageAtStart.join(" / ")}; ${settings.modelName}`);
console.log("| streams | side | tok/s per round | host ms per step | compute ms per step | median tok/s, host ms |\n| --- | --- | --- | --- | --- | --- |");
for (const level of levels) {
  const rows = Object.fromEntries(Object.keys(sides).map((name) => [name, { rates: [], host: [], compute: [] }]));
  for (let round = 0; round < rounds; round++) {
    for (const name of round % 2 ? Object.keys(sides).reverse() : Object.keys(sides)) {
      const model = sides[name];
      const before = model.stepStats();
      let tokens = 0;
      let firstAt;
      await Promise.all(Array.from({ length: level }, async () => {
        for await (const event of model.complete(request())) {
          if (event.type !== "text-delta") continue;
          tokens++;
          firstAt ??= performance.now();
        }
      }));
      const after = model.stepStats();
      const steps = after.steps - before.steps;
      rows[name].rates.push(((tokens - level) * 1000) / (performance.now() - firstAt));
      rows[name].host.push((after.hostMs - before.hostMs) / steps);
      rows[name].compute.push((after.computeMs - before.computeMs) / steps);
    }
  }
  for (const [name, { rates, host, compute }] of Object.entries(rows)) {
    console.log(`| ${level} | ${name} | ${fixed(rates, 1)} | ${fixed(host, 2)} | ${fixed(compute, 1)} | ${median(rates).toFixed(1)}, ${median(host).toFixed(2)} |`);
  }
}
for (const model of Object.values(sides)) await model.dispose();
await llama.dispose();
