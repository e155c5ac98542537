/**
 * Host milliseconds per decode step (kiln's step clock, /metrics) and aggregate tokens/s at several stream counts,
 * for two builds of kiln side by side (KILN_BEFORE: another checkout's bin/kiln.js, or a copy of bin/, dist/, build/ and package.json),
 * sides alternating ABBA at each level: what a change to the per-token path saves, where it is multiplied by streams.
 * Usage: npm run build && KILN_BEFORE=bench/.work/base/bin/kiln.js node bench/investigate/host-per-step.js
 *   (env: LEVELS=1,8,32, ROUNDS, MAX_TOKENS; KILN_AFTER runs the second side from another build too)
 */
import { readSettings } from "../lib/config.js";
import { generationPrompt } from "../lib/prompts.js";
import { startKiln } from "../lib/servers.js";
import { streamChat } from "../lib/sse-client.js";
import { perStep, readStepTotals } from "../lib/step-figures.js";

const levels = (process.env.LEVELS ?? "1,8,32").split(",").map(Number);
const rounds = Number(process.env.ROUNDS ?? 4);
const maxTokens = Number(process.env.MAX_TOKENS ?? 128);
const settings = { ...readSettings(), ctxPerSequence: 1024 };
const parallel = Math.max(...levels);
const sides = [
  { label: "before", server: await startKiln(settings, { parallel, bin: process.env.KILN_BEFORE }) },
  { label: "after", server: await startKiln(settings, { parallel, ...(process.env.KILN_AFTER ? { bin: process.env.KILN_AFTER } : {}) }) },
];
const results = new Map(sides.flatMap((side) => levels.map((level) => [`${side.label}@${level}`, { host: [], rate: [] }])));
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
let request = 0;
try {
  for (const level of levels) {
    for (let round = 0; round < rounds; round++) {
      for (const { label, server } of round % 2 === 0 ? sides : [...sides].reverse()) {
        await new Promise((resolve) => setTimeout(resolve, 500));
        const before = await readStepTotals(server);
        const started = performance.now();
        const timings = await Promise.all(Array.from({ length: level }, () => streamChat(server.baseUrl, {
          model: server.model, messages: [{ role: "user", content: generationPrompt(`h${request++}`) }], maxTokens,
          extra: { temperature: 0, ignore_eos: true }, timeoutMs: 300_000,
        })));
        const seconds = (performance.now() - started) / 1000;
        const step = perStep(await readStepTotals(server), before);
        const r = results.get(`${label}@${level}`);
        r.host.push(step.hostMsPerStep);
        r.rate.push(timings.reduce((sum, t) => sum + t.completionTokens, 0) / seconds);
      }
    }
  }
} finally {
  for (const { server } of sides) await server.stop();
}
console.log(`\n| streams | side | host ms per step (median of ${rounds}) | aggregate tok/s (median) |\n| --- | --- | --- | --- |`);
for (const level of levels) {
  for (const { label } of sides) {
    const r = results.get(`${label}@${level}`);
    console.log(`| ${level} | ${label} | ${median(r.host).toFixed(2)} (${r.host.map((x) => x.toFixed(2)).join(", ")}) | ${median(r.rate).toFixed(1)} |`);
  }
}
