/**
 * Repeated concurrency sweeps, kiln and llama-server alternating at every level (same settings as `npm run bench`),
 * to see the kiln ÷ llama-server ratio through the noise of a shared machine. Prints one JSON line per level:
 * aggregate tokens/s, TTFT p50 and inter-token p50/p95 of each side (the first side alternates by repeat), and for
 * kiln sides the step clock over the level: tokens, compute and host milliseconds per decode step.
 * PRELOAD=1 first sends every side what `npm run bench` sends before its sweep (three ~512-token prompts and three
 * 128-token generations, the single-stream phase), so the slots hold what they hold there.
 * Usage: npm run build && node bench/investigate/sweep-alternating.js
 *   (env: LEVELS=1,2,4,8, REPEATS=2, PRELOAD=0; KILN_BEFORE=<another checkout>/bin/kiln.js adds that build as a side)
 */
import { readSettings } from "../lib/config.js";
import { startComparedSides } from "../lib/servers.js";
import { perStep, readStepTotals } from "../lib/step-figures.js";
import { measureHttpGeneration, measureHttpPrompt, runSweepLevel } from "../lib/workloads.js";

const settings = { ...readSettings(), sweepRounds: 2, sweepTokens: 64 };
const levels = (process.env.LEVELS ?? "1,2,4,8").split(",").map(Number);
const repeats = Number(process.env.REPEATS ?? 2);
const sides = await startComparedSides(settings);
try {
  if (process.env.PRELOAD === "1") {
    for (const { server } of sides) {
      for (let rep = 0; rep < 3; rep++) {
        await measureHttpPrompt(server, settings, `[run ${rep}] ${Array.from({ length: 460 }, (_, i) => `w${(i * 7 + rep) % 97}`).join(" ")}`);
        await measureHttpGeneration(server, settings, `g${rep}`);
      }
    }
  }
  for (let rep = 0; rep < repeats; rep++) {
    for (const clients of levels) {
      const row = { rep, clients };
      // Which side goes first alternates, so neither always runs after the other's load.
      for (const { label, server } of rep % 2 ? [...sides].reverse() : sides) {
        const before = await readStepTotals(server);
        const r = await runSweepLevel({ ...server, label }, settings, clients, `a${rep}-${clients}`);
        const after = await readStepTotals(server);
        const steps = before && after && perStep(after, before);
        row[label] = { tokensPerSecond: Number(r.aggregateTokensPerSecond.toFixed(1)), ttftP50Ms: Math.round(r.ttftP50Ms),
          itlP50Ms: Number(r.itlP50Ms.toFixed(1)), itlP95Ms: Number(r.itlP95Ms.toFixed(1)),
          ...(steps && { steps: steps.steps, tokensPerStep: Number(steps.tokensPerStep.toFixed(2)),
            computeMs: Number(steps.computeMsPerStep.toFixed(2)), hostMs: Number(steps.hostMsPerStep.toFixed(2)) }) };
      }
      console.log(JSON.stringify(row));
    }
  }
} finally {
  await Promise.all(sides.map(({ server }) => server.stop()));
}
