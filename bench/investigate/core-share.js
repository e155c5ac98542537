/**
 * What the core-share rule (core-share.ts: decode steps use no more threads than the cores the process is getting)
 * gains on a contended machine: kiln's engine in-process with its persistent 2-thread pool, one core kept busy by a
 * plain CPU loop (BUSY=0 leaves it out), alternating each round between the rule ("adaptive") and two threads for
 * every step ("fixed-2"). For each: prompt tokens/s (about 1,400 tokens, time to first token) and generation tokens/s
 * after the first token (48 tokens).
 * Usage: npm run build && node bench/investigate/core-share.js [model.gguf]   (env: ROUNDS, BUSY)
 */
import { spawn } from "node:child_process";
import { homedir } from "node:os";
import { CoreShare } from "../../dist/engine/backends/llama-cpp/core-share.js";
import { loadLlamaCppModel } from "../../dist/engine/backends/llama-cpp/llama-cpp-model.js";
import { openLlama } from "../../dist/engine/backends/llama-cpp/load-llama.js";

const path = process.argv[2] ?? `${homedir()}/.kiln/models/smollm2-135m.gguf`;
const rounds = Number(process.env.ROUNDS ?? 3);
const busy = process.env.BUSY === "0" ? undefined : spawn(process.execPath, ["-e", "for(;;){}"], { stdio: "ignore" });
process.once("exit", () => busy?.kill("SIGKILL"));
const adaptive = CoreShare.prototype.threads;
const fixed = function () { return 2; };
const llama = await openLlama(false);
const model = await loadLlamaCppModel({ id: "m", path, llama, parallel: 2, ctxSize: 4096, threads: 2, prefixCache: false });
const prompt = (i) => `[${i}] ${Array.from({ length: 300 }, (_, k) => k + i).join(", ")}`;

async function run(label, i) {
  const t0 = performance.now();
  let first;
  let n = 0;
  let input = 0;
  for await (const e of model.complete({ model: "m", prompt: prompt(i), maxTokens: 48, sampling: { temperature: 0 } })) {
    if (e.type === "text-delta") { n++; first ??= performance.now(); }
    if (e.type === "finish") input = e.usage.inputTokens;
  }
  const end = performance.now();
  console.log(`${label}: prompt ${input} tokens ${((input * 1000) / (first - t0)).toFixed(1)} tok/s, generation ${(((n - 1) * 1000) / (end - first)).toFixed(1)} tok/s`);
}

for (let r = 0; r < rounds; r++) {
  CoreShare.prototype.threads = adaptive;
  await run("adaptive", 10 * r + 1);
  CoreShare.prototype.threads = fixed;
  await run("fixed-2 ", 10 * r + 2);
}
await model.dispose();
