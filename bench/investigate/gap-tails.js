/**
 * Where a server's long inter-token gaps fall at a few clients: `CLIENTS` clients each send `REQUESTS` streaming
 * requests of the concurrency sweep back to back (kiln and llama-server alternating by repeat, same settings as
 * `npm run bench`); prints per side the gap percentiles and, for every gap over twice the median, what the other
 * clients were doing then (a request sent, its first token, its end) within the gap.
 * Usage: npm run build && node bench/investigate/gap-tails.js
 *   (env: CLIENTS=2, REQUESTS=4, REPEATS=2; KILN_BEFORE=<another checkout>/bin/kiln.js adds that build as a side)
 */
import { readSettings } from "../lib/config.js";
import { generationPrompt } from "../lib/prompts.js";
import { startComparedSides } from "../lib/servers.js";
import { streamChat } from "../lib/sse-client.js";
import { percentile } from "../lib/stats.js";

const settings = readSettings();
const clients = Number(process.env.CLIENTS ?? 2);
const requests = Number(process.env.REQUESTS ?? 4);
const repeats = Number(process.env.REPEATS ?? 2);
const sides = await startComparedSides(settings);

async function level(server, tag) {
  const t0 = performance.now();
  const runs = [];
  await Promise.all(Array.from({ length: clients }, async (_, c) => {
    for (let r = 0; r < requests; r++) {
      const sent = performance.now() - t0;
      const t = await streamChat(server.baseUrl, { model: server.model, maxTokens: 64, extra: server.extra, timeoutMs: 120_000,
        messages: [{ role: "system", content: "You are a helpful assistant." }, { role: "user", content: generationPrompt(`${tag}-c${c}-r${r}`) }] });
      runs.push({ client: c, sent, chunks: t.chunkTimesMs.map((x) => x + sent), tokens: t.completionTokens });
    }
  }));
  return { runs, seconds: (performance.now() - t0) / 1000 };
}

function describe({ runs, seconds }) {
  const gaps = runs.flatMap((run) => run.chunks.slice(1).map((at, i) => ({ client: run.client, from: run.chunks[i], at, ms: at - run.chunks[i] })));
  const ms = gaps.map((g) => g.ms);
  const median = percentile(ms, 50);
  const events = runs.flatMap((run) => [["sent", run.sent], ["first", run.chunks[0]], ["end", run.chunks.at(-1)]].map(([what, at]) => ({ client: run.client, what, at })));
  const long = gaps.filter((g) => g.ms > 2 * median).map((g) => {
    const near = events.filter((e) => e.client !== g.client && e.at >= g.from - 2 && e.at <= g.at + 2).map((e) => e.what);
    return `${g.ms.toFixed(1)}${near.length ? `(${near.join("+")})` : ""}`;
  });
  return { tokS: Number((runs.reduce((a, r) => a + r.tokens, 0) / seconds).toFixed(1)), p50: Number(median.toFixed(1)),
    p90: Number(percentile(ms, 90).toFixed(1)), p95: Number(percentile(ms, 95).toFixed(1)), mean: Number((ms.reduce((a, b) => a + b, 0) / ms.length).toFixed(1)),
    gaps: ms.length, long };
}

try {
  for (let rep = 0; rep < repeats; rep++) {
    for (const { label, server } of rep % 2 ? [...sides].reverse() : sides) {
      console.log(JSON.stringify({ rep, side: label, ...describe(await level(server, `g${rep}`)) }));
    }
  }
} finally {
  await Promise.all(sides.map(({ server }) => server.stop()));
}
