/**
 * One stream's speed in a context llama.cpp holds larger than asked (bench/results/2026-11-28-vm-padded-context.md):
 * in process, kiln's engine with 2 sequences of `--ctx-size` 10,048 (padded by llama.cpp to 10,240) and of 10,240,
 * greedy, 128 tokens, three requests each; then over HTTP, `kiln serve` and llama-server with 2 sequences of 10,048
 * tokens, a counting completion of 400 tokens three times per start (ITL p50), sides alternated.
 * Usage: npm run build && node bench/investigate/padded-context.js   (env: ROUNDS, default 2)
 */
import { readSettings } from "../lib/config.js";
import { ensureLlamaCpp } from "../lib/llama-cpp-build.js";
import { startKiln, startLlamaServer } from "../lib/servers.js";
import { readSseData } from "../lib/sse-client.js";

const rounds = Number(process.env.ROUNDS ?? 2);
const settings = readSettings({ ...process.env, BENCH_PARALLEL: "2", BENCH_CTX: "10048" });
const { createEngine } = await import("../../dist/engine/index.js");

async function inProcess(ctxSize) {
  const engine = await createEngine({ models: [{ id: "m", path: settings.modelPath }], parallel: 2, ctxSize, threads: settings.threads });
  const rates = [];
  try {
    for (let i = 0; i < 3; i++) {
      let n = 0;
      let first = 0;
      const request = { model: "m", messages: [{ role: "user", parts: [{ type: "text", text: `Write a long story about kilns, part ${i}.` }] }], sampling: { temperature: 0 }, maxTokens: 128 };
      for await (const event of engine.generate(request)) {
        if (event.type !== "text-delta") continue;
        if (n++ === 0) first = performance.now();
      }
      rates.push(Number((((n - 1) * 1000) / (performance.now() - first)).toFixed(1)));
    }
  } finally {
    await engine.close();
  }
  return rates;
}

const counting = `${Array.from({ length: 30 }, (_, i) => i + 1).join(", ")},`;
async function itlP50(server) {
  const res = await fetch(`${server.baseUrl}/v1/completions`, { method: "POST", headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: server.model, prompt: counting, max_tokens: 400, temperature: 0, stream: true, ...server.extra }) });
  const times = [];
  for await (const data of readSseData(res.body)) {
    if (data === "[DONE]") break;
    if (JSON.parse(data).choices?.[0]?.text) times.push(performance.now());
  }
  const gaps = times.slice(3).map((t, i) => t - times[i + 2]).sort((a, b) => a - b);
  return Number(gaps[Math.floor(gaps.length / 2)].toFixed(1));
}

for (let round = 0; round < rounds; round++) {
  for (const ctxSize of [10048, 10240]) console.log(JSON.stringify({ round, side: "engine", ctxSize, tokPerS: await inProcess(ctxSize) }));
}
const llamaCpp = ensureLlamaCpp({ modelPath: settings.modelPath, threads: settings.threads, log: () => {} });
for (let round = 0; round < rounds; round++) {
  for (const [side, start] of [["kiln", () => startKiln(settings)], ["llama-server", () => startLlamaServer(settings, llamaCpp)]]) {
    const server = await start();
    try {
      const itl = [await itlP50(server), await itlP50(server), await itlP50(server)];
      console.log(JSON.stringify({ round, side, ctxSize: settings.ctxPerSequence, itlP50Ms: itl }));
    } finally {
      await server.stop();
    }
  }
}
