/**
 * How node-llama-cpp's CPU decoding depends on its threads, in one process with sides alternating every round:
 *  - t1: one thread;
 *  - t2: two threads, node-llama-cpp as shipped (ggml starts and joins worker threads inside every decode call);
 *  - t2-adaptive: two threads for steps of 16+ tokens, one below (kiln's fallback, decode-threads.ts);
 *  - t2-pool: two threads with a persistent ggml thread pool attached (kiln's default, native/threadpool.c).
 * For each: greedy generation tokens/s after the first token (one sequence, 128 tokens, a context of 8 sequences ×
 * 8192 like the benchmark's servers) and prompt evaluation tokens/s (512 tokens).
 * Usage: npm run build && node bench/investigate/decode-threads.js   (env: ROUNDS, SIDES)
 */
import { readSettings } from "../lib/config.js";
import { loadDirect, renderChatMl } from "../lib/direct.js";
import { generationPrompt } from "../lib/prompts.js";
import { applyDecodeThreads } from "../../dist/engine/backends/llama-cpp/decode-threads.js";
import { attachThreadPool } from "../../dist/engine/backends/llama-cpp/thread-pool.js";

const settings = readSettings();
const rounds = Number(process.env.ROUNDS ?? 3);
const sides = (process.env.SIDES ?? "t1,t2,t2-adaptive,t2-pool").split(",");
const direct = await loadDirect({ ...settings, threads: 2 });
const promptTokens = direct.model.tokenize(generationPrompt("prompt").repeat(20), false).slice(0, 512);

async function measure(side, tag) {
  const threads = side === "t1" ? 1 : 2;
  const context = await direct.model.createContext({ contextSize: settings.ctxPerSequence, sequences: settings.parallel, threads });
  const pool = side === "t2-pool" ? attachThreadPool(context, direct.model, 2) : undefined;
  if (side === "t2-pool" && !pool) throw new Error("the thread pool could not be attached (npm run build compiles it)");
  if (side === "t2-adaptive") applyDecodeThreads(context, { threads: 2, minTokensForAllThreads: 16 });
  try {
    const sequence = context.getSequence();
    const t0 = performance.now();
    await sequence.evaluateWithoutGeneratingNewTokens(promptTokens);
    const prompt = (promptTokens.length * 1000) / (performance.now() - t0);
    await sequence.clearHistory();
    const tokens = direct.model.tokenize(renderChatMl([{ role: "user", content: generationPrompt(tag) }]), true);
    let n = 0;
    let firstAt = 0;
    for await (const token of sequence.evaluate(tokens, { temperature: 0 })) {
      if (n++ === 0) firstAt = performance.now();
      if (direct.model.isEogToken(token) || n >= settings.generateTokens) break;
    }
    return { prompt, generate: ((n - 1) * 1000) / (performance.now() - firstAt) };
  } finally {
    await context.dispose();
    pool?.release();
  }
}

const results = Object.fromEntries(sides.map((s) => [s, []]));
for (let round = 0; round < rounds; round++) {
  for (const side of sides) results[side].push(await measure(side, `r${round}-${side}`));
  const line = sides.map((s) => {
    const r = results[s].at(-1);
    return [s, `${r.prompt.toFixed(0)} pp / ${r.generate.toFixed(1)} gen`];
  });
  console.log(JSON.stringify({ round, ...Object.fromEntries(line) }));
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
console.log(JSON.stringify({ median: Object.fromEntries(sides.map((s) => [s, { prompt: Number(median(results[s].map((r) => r.prompt)).toFixed(0)), generate: Number(median(results[s].map((r) => r.generate)).toFixed(1)) }])) }));
