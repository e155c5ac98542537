/**
 * One stream's generation from kiln started plainly, kiln started another way (Node flags in VARIANT_NODE_FLAGS,
 * environment in VARIANT_ENV as NAME=value pairs), and llama-server: one client at a time, greedy, sides alternating
 * each round; tokens/s after the first token and the median gap between chunks.
 * Usage: npm run build && VARIANT_NODE_FLAGS=--single-threaded-gc node bench/investigate/kiln-variants.js
 *   (env: VARIANT_NODE_FLAGS, VARIANT_ENV, ROUNDS, MAX_TOKENS, PAUSE_MS, BENCH_PARALLEL, BENCH_CTX). KILN_BEFORE (as in
 *   sweep-alternating.js) runs the plain side from another build (a copy of bin/, dist/, build/ and package.json, or
 *   another checkout's bin/kiln.js), so two versions of the code compare;
 *   NO_PEER=1 leaves llama-server out (two sides alternating ABBA: no side is always the one that never follows itself).
 */
import { readSettings } from "../lib/config.js";
import { ensureLlamaCpp } from "../lib/llama-cpp-build.js";
import { generationPrompt } from "../lib/prompts.js";
import { startKiln, startLlamaServer } from "../lib/servers.js";
import { generationRate, interTokenGaps, streamChat } from "../lib/sse-client.js";

const settings = readSettings();
const rounds = Number(process.env.ROUNDS ?? 4);
const nodeArgs = (process.env.VARIANT_NODE_FLAGS ?? "").split(" ").filter(Boolean);
const env = Object.fromEntries((process.env.VARIANT_ENV ?? "").split(" ").filter(Boolean).map((pair) => pair.split("=")));
const llamaCpp = process.env.NO_PEER ? undefined : ensureLlamaCpp({ modelPath: settings.modelPath, threads: settings.threads, log: () => {} });
const sides = [
  { label: process.env.KILN_BEFORE ? "kiln before" : "kiln", server: await startKiln(settings, process.env.KILN_BEFORE ? { bin: process.env.KILN_BEFORE } : {}) },
  { label: `kiln ${[...nodeArgs, process.env.VARIANT_ENV ?? ""].join(" ")}`, server: await startKiln(settings, { nodeArgs, env }) },
  ...(process.env.NO_PEER ? [] : [{ label: "llama-server", server: await startLlamaServer(settings, llamaCpp) }]),
];
// Each kiln's step cost as measured at its load (the planner's starting point), in case the sides differ there.
for (const { label, server } of sides.slice(0, 2)) {
  const listed = await (await fetch(`${server.baseUrl}/v1/models`)).json();
  console.log(`${label}: step cost at load ${JSON.stringify(listed.data?.[0]?.details?.stepCostAtLoad)}`);
}
const pauseMs = Number(process.env.PAUSE_MS ?? 500);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const results = new Map(sides.map((s) => [s.label, { rates: [], gaps: [], ttfts: [] }]));
try {
  for (let round = 0; round < rounds; round++) {
    const order = round % 2 === 0 ? sides : [...sides].reverse();
    for (const { label, server } of order) {
      // The server before may still be spinning its thread pool's workers (ggml polls for ~0.1 s after a step).
      await new Promise((resolve) => setTimeout(resolve, pauseMs));
      const timing = await streamChat(server.baseUrl, { model: server.model, messages: [{ role: "user", content: generationPrompt(`r${round}-${label}`) }],
        maxTokens: Number(process.env.MAX_TOKENS ?? settings.generateTokens), extra: { ...server.extra, temperature: 0 }, timeoutMs: 300_000 });
      const r = results.get(label);
      r.rates.push(generationRate(timing));
      r.gaps.push(...interTokenGaps(timing));
      r.ttfts.push(timing.ttftMs);
      console.log(`round ${round} ${label}: ${generationRate(timing).toFixed(1)} tok/s`);
    }
  }
} finally {
  for (const { server } of sides) await server.stop();
}
console.log(`\n| side | tok/s per round | median | gap p50 ms | TTFT p50 ms |\n| --- | --- | --- | --- | --- |`);
for (const [label, r] of results) {
  console.log(`| ${label} | ${r.rates.map((x) => x.toFixed(1)).join(", ")} | ${median(r.rates).toFixed(1)} | ${median(r.gaps).toFixed(2)} | ${median(r.ttfts).toFixed(1)} |`);
}
