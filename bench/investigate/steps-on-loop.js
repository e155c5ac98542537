/**
 * Does decoding short steps on the event loop's thread (decode-threads.ts) pay? In one process, alternating sides
 * every round, two copies of the same model generate: one decoding its short steps on the loop's thread (the default),
 * one always in node-llama-cpp's libuv work item. Tokens/s after each request's first token, with 1, 4 and 8 requests
 * at once (seeded sampling, 200 tokens each), and the steps each side decoded on the loop.
 * Usage: npm run build && node bench/investigate/steps-on-loop.js   (env: BENCH_MODEL(_PATH), BENCH_THREADS, LEVELS, ROUNDS)
 */
import { loadLlamaCppModel } from "../../dist/engine/backends/llama-cpp/llama-cpp-model.js";
import { openLlama } from "../../dist/engine/backends/llama-cpp/load-llama.js";
import { readSettings } from "../lib/config.js";
import { describeMachine } from "../lib/machine.js";

const settings = readSettings();
const levels = (process.env.LEVELS ?? "1,4,8").split(",").map(Number);
const rounds = Number(process.env.ROUNDS ?? 4);
const maxTokens = 200;
const llama = await openLlama(false);
const load = (stepsOnLoop) => loadLlamaCppModel({
  id: "m", path: settings.modelPath, llama, parallel: Math.max(...levels), ctxSize: 1024, threads: settings.threads, prefixCache: false, stepsOnLoop,
});
const sides = { "on the loop": await load(true), "in a work item": await load(false) };
const request = (i) => ({ model: "m", prompt: `Story ${i}: once upon a time in a kiln,`, maxTokens, sampling: { temperature: 0.8, seed: i + 1 } });
const stepsOf = (model) => model.parts.steps;

const machine = describeMachine();
console.log(`${machine.cpu.model}, ${settings.threads} threads, load average ${machine.loadAverageAtStart.join(" / ")}; ${settings.modelName}`);
console.log("| requests at once | side | tok/s per round | median |\n| --- | --- | --- | --- |");
for (const level of levels) {
  const rates = Object.fromEntries(Object.keys(sides).map((name) => [name, []]));
  for (let round = 0; round < rounds; round++) {
    const order = round % 2 ? Object.keys(sides).reverse() : Object.keys(sides);
    for (const name of order) {
      let tokens = 0;
      let firstAt;
      await Promise.all(Array.from({ length: level }, async (_, i) => {
        for await (const event of sides[name].complete(request(i))) {
          if (event.type !== "text-delta") continue;
          tokens++;
          firstAt ??= performance.now();
        }
      }));
      rates[name].push(((tokens - level) * 1000) / (performance.now() - firstAt));
    }
  }
  for (const [name, values] of Object.entries(rates)) {
    const median = [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
    console.log(`| ${level} | ${name} | ${values.map((v) => v.toFixed(1)).join(", ")} | ${median.toFixed(1)} |`);
  }
}
for (const [name, model] of Object.entries(sides)) console.log(`steps on the loop, ${name}: ${stepsOf(model)?.loopSteps ?? "none (no thread pool)"}`);
for (const model of Object.values(sides)) await model.dispose();
await llama.dispose();
