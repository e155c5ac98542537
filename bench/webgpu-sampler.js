/**
 * `node bench/webgpu-sampler.js`: what the WebGPU backend's CPU sampler costs per token on a vocabulary of the coder
 * models' size (151,936 logits), at kiln's default sampling (temperature 0.8, top-k 40, top-p 0.95, min-p 0.05) and
 * with top-k off. A GPU decodes the 1.5B model's token in about 4 ms, so this is what a sampled (not greedy) token
 * adds there. BENCH_SAMPLER_BASELINE=<an earlier build's dist> times that build's sampler in the same run.
 * Build first (npm run build). Prints one JSON object.
 */
import { cpus } from "node:os";

const builds = { current: "../dist" };
if (process.env.BENCH_SAMPLER_BASELINE) builds.baseline = process.env.BENCH_SAMPLER_BASELINE.replace(/\/$/, "");
const VOCABULARY = 151_936;
const PICKS = Number(process.env.BENCH_SAMPLER_PICKS ?? 100);

// Logits shaped like a model's: most far below the best few.
let state = 7;
const random = () => (state = (state * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
const logits = Float32Array.from({ length: VOCABULARY }, () => -8 + 6 * Math.sqrt(-2 * Math.log(random() + 1e-12)) * Math.cos(2 * Math.PI * random()) / 3);
for (let i = 0; i < 20; i++) logits[Math.floor(random() * VOCABULARY)] = 12 + random() * 4;

const result = { cpu: cpus()[0]?.model, vocabulary: VOCABULARY, picks: PICKS, msPerPick: {} };
for (const round of [0, 1]) {
  for (const [name, dist] of Object.entries(builds)) {
    const { createSampler } = await import(`${dist}/engine/backends/webgpu/sampler.js`);
    for (const [label, options] of [["defaults", { temperature: 0.8, seed: 1 }], ["top-k off", { temperature: 0.8, topK: 0, seed: 1 }]]) {
      const sampler = createSampler(options);
      const t0 = performance.now();
      for (let i = 0; i < PICKS; i++) sampler.pick(logits.slice(), []);
      const ms = (performance.now() - t0) / PICKS;
      if (round === 1) result.msPerPick[`${name}, ${label}`] = Math.round(ms * 100) / 100;
    }
  }
}
console.log(JSON.stringify(result));
