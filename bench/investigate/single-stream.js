/**
 * Where does kiln's single-stream generation lose against node-llama-cpp called directly? In one process, alternating
 * sides each round, this measures greedy generation tokens/s (after the first token) for:
 *  - direct-1: node-llama-cpp, a context of one sequence (what the benchmark's "direct" row uses);
 *  - direct-N: node-llama-cpp, a context of N sequences of the same size (what kiln and llama-server allocate);
 *  - engine: kiln's engine in-process (no HTTP), N sequences;
 *  - engine-http: `kiln serve` in a child process, read over HTTP streaming (what the benchmark's kiln row measures).
 * Usage: npm run build && node bench/investigate/single-stream.js   (env: BENCH_THREADS, BENCH_PARALLEL, ROUNDS)
 */
import { readSettings } from "../lib/config.js";
import { loadDirect, renderChatMl } from "../lib/direct.js";
import { generationPrompt } from "../lib/prompts.js";
import { startKiln } from "../lib/servers.js";
import { generationRate, streamChat } from "../lib/sse-client.js";

const settings = readSettings();
const rounds = Number(process.env.ROUNDS ?? 3);
const tokens = settings.generateTokens;
const sides = (process.env.SIDES ?? "direct-1,direct-N,engine,engine-http").split(",");
const messages = (tag) => [{ role: "user", content: generationPrompt(tag) }];

/** Tokens/s from the first token to the last: the decode rate, without the prefill. */
const rate = (n, firstAt, lastAt) => ((n - 1) * 1000) / (lastAt - firstAt);

async function directRate(direct, sequences, tag) {
  const context = await direct.model.createContext({ contextSize: settings.ctxPerSequence, sequences, threads: settings.threads });
  try {
    const prompt = direct.model.tokenize(renderChatMl(messages(tag)), true);
    let n = 0;
    let firstAt = 0;
    for await (const token of context.getSequence().evaluate(prompt, { temperature: 0 })) {
      if (n++ === 0) firstAt = performance.now();
      if (direct.model.isEogToken(token) || n >= tokens) break;
    }
    return rate(n, firstAt, performance.now());
  } finally {
    await context.dispose();
  }
}

async function engineRate(engine, tag) {
  let n = 0;
  let firstAt = 0;
  const request = { model: settings.modelName, messages: messages(tag).map((m) => ({ role: m.role, parts: [{ type: "text", text: m.content }] })), sampling: { temperature: 0 }, maxTokens: tokens };
  for await (const event of engine.generate(request)) {
    if (event.type !== "text-delta") continue;
    if (n++ === 0) firstAt = performance.now();
  }
  return rate(n, firstAt, performance.now());
}

async function httpRate(server, tag) {
  return generationRate(await streamChat(server.baseUrl, { model: settings.modelName, messages: messages(tag), maxTokens: tokens, timeoutMs: 300_000 }));
}

const direct = await loadDirect(settings);
const { createEngine } = await import("../../dist/engine/index.js");
const engine = sides.includes("engine")
  ? await createEngine({ models: [{ id: settings.modelName, path: settings.modelPath }], parallel: settings.parallel, ctxSize: settings.ctxPerSequence, threads: settings.threads })
  : undefined;
const server = sides.includes("engine-http") ? await startKiln(settings) : undefined;
const results = Object.fromEntries(sides.map((s) => [s, []]));
try {
  for (let round = 0; round < rounds; round++) {
    for (const side of sides) {
      const tag = `r${round}-${side}`;
      const value = side === "direct-1" ? await directRate(direct, 1, tag)
        : side === "direct-N" ? await directRate(direct, settings.parallel, tag)
          : side === "engine" ? await engineRate(engine, tag)
            : await httpRate(server, tag);
      results[side].push(Number(value.toFixed(1)));
    }
    console.log(JSON.stringify({ round, ...Object.fromEntries(sides.map((s) => [s, results[s].at(-1)])) }));
  }
} finally {
  await server?.stop();
  await engine?.close();
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
console.log(JSON.stringify({ threads: settings.threads, parallel: settings.parallel, tokens, median: Object.fromEntries(sides.map((s) => [s, median(results[s])])) }));
