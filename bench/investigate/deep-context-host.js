/**
 * What one stream's host work per token costs deep in a long context: a coding agent's conversation of ~20k tokens.
 * In process, one sequence, a long prompt evaluated once (then found in the prefix cache on the next rounds), greedy
 * generation of TOKENS tokens; prints the step clock's host and compute milliseconds per step. Run it once per build
 * with KILN_DIST at that build's dist/ to compare (node-llama-cpp's own sequence path copied the whole token list
 * each token).
 * Usage: npm run build && node bench/investigate/deep-context-host.js <model.gguf>
 * Env: KILN_DIST (this checkout's dist), WORDS (15000, about 20k tokens), TOKENS (96), CTX (24576), ROUNDS (4).
 */
import { pathToFileURL } from "node:url";
import { join, resolve } from "node:path";
const dist = resolve(process.env.KILN_DIST ?? new URL("../../dist", import.meta.url).pathname);
const { loadLlamaCppModel } = await import(pathToFileURL(join(dist, "engine/backends/llama-cpp/llama-cpp-model.js")).href);
const { openLlama } = await import(pathToFileURL(join(dist, "engine/backends/llama-cpp/load-llama.js")).href);
const [path] = process.argv.slice(2);
const words = Number(process.env.WORDS ?? 15000);
const tokens = Number(process.env.TOKENS ?? 96);
const llama = await openLlama("auto");
const model = await loadLlamaCppModel({ id: "m", path, llama, parallel: 1, ctxSize: Number(process.env.CTX ?? 24576), warmUp: true, prefixCache: true, prefillLane: false });
await model.warmUp();
const vocab = "the kiln fires clay slowly while potters watch glaze melt across a bowl of river stone".split(" ");
const prompt = "Notes. " + Array.from({ length: words }, (_, k) => vocab[(k * 7) % vocab.length]).join(" ") + "\nSummarise the notes.";
for (let round = 0; round < Number(process.env.ROUNDS ?? 4); round++) {
  const before = { ...model.stepStats() };
  const t0 = performance.now();
  let usage;
  for await (const event of model.complete({ model: "m", prompt, maxTokens: tokens, sampling: { temperature: 0, ignoreEos: true } })) {
    if (event.type === "finish") usage = event.usage;
    if (event.type === "error") throw new Error(event.error.message);
  }
  const after = model.stepStats();
  const steps = after.steps - before.steps;
  console.log(JSON.stringify({ dist, round, input: usage.inputTokens, cached: usage.cachedInputTokens, out: usage.outputTokens, ms: Math.round(performance.now() - t0), steps,
    hostMsPerStep: +((after.hostMs - before.hostMs) / steps).toFixed(3), computeMsPerStep: +((after.computeMs - before.computeMs) / steps).toFixed(2) }));
}
process.exit(0);
