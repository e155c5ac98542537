/**
 * Where a request's time goes, kiln beside llama-server (same settings as `npm run bench`'s sweep: the sweep's
 * prompts, 64 tokens out, each client sending two requests back to back): time to first token, first to last token
 * (and its mean gap), last token to the end of the response, in medians over alternated rounds, and for kiln sides the
 * step clock per round. Medians of many requests see through the noise that a sweep level's few requests do not.
 * Usage: npm run build && node bench/investigate/request-timeline.js   (env: CLIENTS=1, ROUNDS=8, KILN_BEFORE as sweep-alternating.js)
 */
import { readSettings } from "../lib/config.js";
import { startComparedSides } from "../lib/servers.js";
import { streamChat } from "../lib/sse-client.js";
import { generationPrompt } from "../lib/prompts.js";
import { median } from "../lib/stats.js";
import { perStep, readStepTotals } from "../lib/step-figures.js";

const settings = { ...readSettings(), sweepTokens: 64 };
const rounds = Number(process.env.ROUNDS ?? 8);
const clients = Number(process.env.CLIENTS ?? 1);
const sides = await startComparedSides(settings);
const samples = new Map(sides.map(({ label }) => [label, []]));
try {
  for (let round = 0; round < rounds; round++) {
    for (const { label, server } of round % 2 ? [...sides].reverse() : sides) {
      const before = await readStepTotals(server);
      const started = performance.now();
      const rows = (await Promise.all(Array.from({ length: clients }, (_, c) => requestsOf(server, `t${round}-c${c}`)))
        .catch((error) => { throw new Error(`${label} (${server.baseUrl}), round ${round}: ${error.message} (${error.cause?.message ?? ""})`); })).flat();
      const roundMs = performance.now() - started;
      const after = await readStepTotals(server);
      const steps = before && after && perStep(after, before);
      samples.get(label).push(...rows.map((row) => ({ ...row, roundTokPerS: (rows.reduce((sum, row) => sum + row.tokens, 0) * 1000) / roundMs, ...steps })));
    }
  }
  for (const [label, rows] of samples) {
    const m = (key) => Number(median(rows.map((row) => row[key]).filter((v) => Number.isFinite(v))).toFixed(2));
    console.log(JSON.stringify({ side: label, clients, requests: rows.length, roundTokPerS: m("roundTokPerS"), totalMs: m("totalMs"), ttftMs: m("ttftMs"),
      spanMs: m("spanMs"), meanGapMs: m("meanGapMs"), tailMs: m("tailMs"), tokens: m("tokens"), prompt: m("prompt"), cached: m("cached"),
      stepsPerRound: m("steps"), tokensPerStep: m("tokensPerStep"), computeMsPerStep: m("computeMsPerStep"), hostMsPerStep: m("hostMsPerStep") }));
  }
} finally {
  await Promise.all(sides.map(({ server }) => server.stop()));
}

/** One client's two requests, back to back, each timed. */
async function requestsOf(server, tag) {
  const rows = [];
  for (let r = 0; r < 2; r++) {
    const started = performance.now();
    const t = await streamChat(server.baseUrl, { model: server.model, maxTokens: settings.sweepTokens, timeoutMs: 120_000,
      messages: [{ role: "system", content: "You are a helpful assistant." }, { role: "user", content: generationPrompt(`${tag}-${r}`) }] });
    const totalMs = performance.now() - started;
    const spanMs = t.chunkTimesMs.at(-1) - t.ttftMs;
    rows.push({ totalMs, ttftMs: t.ttftMs, spanMs, meanGapMs: spanMs / (t.chunkTimesMs.length - 1), tailMs: totalMs - t.chunkTimesMs.at(-1),
      tokens: t.completionTokens, cached: t.cachedTokens ?? 0, prompt: t.promptTokens });
  }
  return rows;
}
