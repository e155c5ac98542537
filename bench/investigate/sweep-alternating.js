/**
 * Repeated concurrency sweeps, kiln and llama-server alternating at every level (same settings as `npm run bench`),
 * to see the kiln ÷ llama-server ratio through the noise of a shared machine. Prints one JSON line per level:
 * aggregate tokens/s and TTFT p50 of each side.
 * Usage: npm run build && node bench/investigate/sweep-alternating.js   (env: LEVELS=1,2,4,8, REPEATS=2)
 */
import { readSettings } from "../lib/config.js";
import { ensureLlamaCpp } from "../lib/llama-cpp-build.js";
import { startKiln, startLlamaServer } from "../lib/servers.js";
import { runSweepLevel } from "../lib/workloads.js";

const settings = { ...readSettings(), sweepRounds: 2, sweepTokens: 64 };
const levels = (process.env.LEVELS ?? "1,2,4,8").split(",").map(Number);
const repeats = Number(process.env.REPEATS ?? 2);
const llamaCpp = ensureLlamaCpp({ modelPath: settings.modelPath, threads: settings.threads, log: () => {} });
const sides = [
  { label: "kiln", server: await startKiln(settings) },
  { label: "llama-server", server: await startLlamaServer(settings, llamaCpp) },
];
try {
  for (let rep = 0; rep < repeats; rep++) {
    for (const clients of levels) {
      const row = { rep, clients };
      for (const { label, server } of sides) {
        const r = await runSweepLevel({ ...server, label }, settings, clients, `a${rep}-${clients}`);
        row[label] = { tokensPerSecond: Number(r.aggregateTokensPerSecond.toFixed(1)), ttftP50Ms: Math.round(r.ttftP50Ms) };
      }
      console.log(JSON.stringify(row));
    }
  }
} finally {
  await Promise.all(sides.map(({ server }) => server.stop()));
}
