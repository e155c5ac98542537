/**
 * How often a draft's proposals are kept at a temperature: Qwen2.5-Coder-1.5B drafted by Qwen2.5-Coder-0.5B, in
 * process, drafting at every step (the draft declaration's `always`, so the measured speed rule does not decide), the
 * prompts of bench:speculative. Acceptance is a property of the two models and the acceptance rule, not of the
 * machine's speed, so it can be compared across builds on any machine: run it once per build with KILN_DIST pointing
 * at that build's dist/ (default: this checkout's).
 *
 * Usage: npm run build && node bench/speculative-acceptance.js
 * Env: KILN_DIST, BENCH_ACCEPT_TEMPERATURES (0.7,1), BENCH_ACCEPT_TOKENS (128), BENCH_ACCEPT_ROUNDS (2),
 * BENCH_THREADS. Prints one JSON line per request and one per temperature.
 */
import { homedir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";

const env = process.env;
const dist = resolve(env.KILN_DIST ?? new URL("../dist", import.meta.url).pathname);
const { createEngine } = await import(pathToFileURL(join(dist, "engine", "index.js")).href);
const models = join(homedir(), ".kiln", "models");
const temperatures = (env.BENCH_ACCEPT_TEMPERATURES ?? "0.7,1").split(",").map(Number);
const maxTokens = Number(env.BENCH_ACCEPT_TOKENS ?? 128);
const rounds = Number(env.BENCH_ACCEPT_ROUNDS ?? 2);
const PROMPTS = [
  "Write a Python function that parses a CSV file into a list of dictionaries, with type hints and a docstring.",
  "Write a TypeScript class implementing an LRU cache with get, set and delete, with comments.",
  "Write a Python script that walks a directory tree and prints the ten largest files with their sizes.",
  "Write a JavaScript function that debounces another function, and a short usage example.",
];

const engine = await createEngine({
  models: [{
    id: "coder",
    path: join(models, "qwen2.5-coder-1.5b.gguf"),
    draft: { path: join(models, "qwen2.5-coder-0.5b.gguf"), always: true },
  }],
  parallel: 1,
  ctxSize: 2048,
  threads: env.BENCH_THREADS ? Number(env.BENCH_THREADS) : undefined,
});
try {
  for (const temperature of temperatures) {
    const total = { drafted: 0, accepted: 0, outputTokens: 0, ms: 0 };
    for (let round = 0; round < rounds; round++) {
      for (const [index, prompt] of PROMPTS.entries()) {
        const started = performance.now();
        let usage;
        for await (const event of engine.generate({ model: "coder", messages: [{ role: "user", parts: [{ type: "text", text: prompt }] }], maxTokens, sampling: { temperature } })) {
          if (event.type === "error") throw event.error;
          if (event.type === "finish") usage = event.usage;
        }
        const ms = performance.now() - started;
        const { drafted, accepted } = usage.draft ?? { drafted: 0, accepted: 0 };
        total.drafted += drafted;
        total.accepted += accepted;
        total.outputTokens += usage.outputTokens;
        total.ms += ms;
        console.log(JSON.stringify({ temperature, round, prompt: index, outputTokens: usage.outputTokens, drafted, accepted, ms: Math.round(ms) }));
      }
    }
    console.log(JSON.stringify({ temperature, dist, ...total, ms: Math.round(total.ms), acceptance: +(total.accepted / total.drafted).toFixed(3) }));
  }
} finally {
  await engine.close();
}
