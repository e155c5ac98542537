/**
 * The host's share of a decode step on the path from one step's end to the next one's start (what a GPU waits
 * through), in process with the real default model: N streams of plain sampling with their event readers woken
 * during the next step (as on a GPU), the step clock's host milliseconds per step, and how much of it each stream's
 * token-to-events work (TokenEvents.push: detokenizing, stop sequences, tool calls, block events) took, beside the
 * compute milliseconds per step. On a GPU machine it runs there (GPU=none keeps it on the CPU); BENCH_MODEL_PATH names
 * another model (bench/gpu/run-on-device.sh passes the random-weight 1.5B one).
 * Usage: npm run build && node bench/investigate/critical-path.js   (env: STREAMS=1,8,32,64, TOKENS=96, ROUNDS=3, READERS=during|at-once, GPU)
 */
import { loadLlamaCppModel } from "../../dist/engine/backends/llama-cpp/llama-cpp-model.js";
import { openLlama } from "../../dist/engine/backends/llama-cpp/load-llama.js";
import { TokenEvents } from "../../dist/engine/token-events.js";
import { readSettings } from "../lib/config.js";

const settings = readSettings();
const levels = (process.env.STREAMS ?? "1,8,32,64").split(",").map(Number);
const tokens = Number(process.env.TOKENS ?? 96);
const rounds = Number(process.env.ROUNDS ?? 3);
const readersDuringSteps = (process.env.READERS ?? "during") === "during";

// Time spent in TokenEvents.push, summed over every call.
let pushMs = 0;
const push = TokenEvents.prototype.push;
TokenEvents.prototype.push = function timedPush(...args) {
  const started = performance.now();
  try {
    return push.apply(this, args);
  } finally {
    pushMs += performance.now() - started;
  }
};

const llama = await openLlama(process.env.GPU === "none" ? false : "auto");
const model = await loadLlamaCppModel({
  id: "bench", path: settings.modelPath, llama, parallel: Math.max(...levels), ctxSize: 512, threads: settings.threads,
  prefixCache: false, prefillLane: false, readersDuringSteps,
});
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
let request = 0;
try {
  console.log(`${llama.gpu || "CPU"}, ${settings.modelPath}, readers ${readersDuringSteps ? "during the next step" : "at once"}`);
  console.log(`| streams | host ms per step (rounds) | TokenEvents.push ms per step | compute ms per step | steps |\n| --- | --- | --- | --- | --- |`);
  for (const level of levels) {
    const host = [];
    const pushes = [];
    const compute = [];
    let steps = 0;
    for (let round = 0; round < rounds + 1; round++) {
      const before = { ...model.stepStats() };
      pushMs = 0;
      await Promise.all(Array.from({ length: level }, async () => {
        const events = model.complete({ model: "bench", prompt: `Story ${request++}: once upon a time`, maxTokens: tokens, sampling: { temperature: 0 }, ignoreEos: true });
        for await (const event of events) if (event.type === "error") throw new Error(event.error.message);
      }));
      const after = model.stepStats();
      // The first round warms V8 up and is left out.
      if (round === 0) continue;
      steps = after.steps - before.steps;
      host.push((after.hostMs - before.hostMs) / steps);
      pushes.push(pushMs / steps);
      compute.push((after.computeMs - before.computeMs) / steps);
    }
    console.log(`| ${level} | ${median(host).toFixed(2)} (${host.map((x) => x.toFixed(2)).join(", ")}) | ${median(pushes).toFixed(3)} | ${median(compute).toFixed(2)} | ${steps} |`);
  }
} finally {
  await model.dispose();
  await llama.dispose();
}
