/**
 * `npm run bench:mixed`: a team's mixed traffic (bench/lib/mixed-phase.js) on kiln and llama-server (same llama.cpp
 * release and CPU kernels, bench/lib/llama-cpp-build.js) with the same slots, threads and context, at levels 1, 8,
 * 16 and 32 clients and 8 again. On 2 CPU cores the 135M default model stands in for a GPU: its compute per step is
 * small, so host work and step planning show as they do on a GPU. `npm run bench` runs the same phase at up to 64
 * clients.
 *
 * Env: BENCH_MIXED_LEVELS ("1,8,16,32,8"), BENCH_MIXED_SECONDS (per level, 20), BENCH_MIXED_ROUNDS (2),
 * BENCH_MIXED_BUSY=1 (one core kept busy by another process), IGNORE_EOS=1 (every request generates its 128 tokens,
 * so early end-of-text answers do not move a level's rate), BENCH_KILN_BASE (another checkout, built: added as
 * the side "kiln (base)"), BENCH_PARALLEL (32), BENCH_CTX (1024), and bench/lib/config.js's model and threads.
 * Writes bench/results/<date>-<host>-mixed[-busy].{json,md}.
 */
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { readSettings } from "./lib/config.js";
import { ensureLlamaCpp } from "./lib/llama-cpp-build.js";
import { startBusyCore } from "./lib/long-prompts.js";
import { describeMachine } from "./lib/machine.js";
import { renderMixedRounds, runMixedPhase } from "./lib/mixed-phase.js";
import { startKiln, startLlamaServer } from "./lib/servers.js";

const RESULTS_DIR = fileURLToPath(new URL("./results/", import.meta.url));
const log = (line) => console.error(`[bench:mixed ${new Date().toISOString().slice(11, 19)}] ${line}`);

const env = process.env;
const settings = readSettings({ BENCH_PARALLEL: "32", BENCH_CTX: "1024", ...env });
const levels = env.BENCH_MIXED_LEVELS ?? "1,8,16,32,8";
const seconds = Number(env.BENCH_MIXED_SECONDS ?? 20);
const rounds = Number(env.BENCH_MIXED_ROUNDS ?? 2);
const busy = env.BENCH_MIXED_BUSY === "1";
const base = env.BENCH_KILN_BASE;

async function main() {
  const machine = describeMachine();
  const llamaCpp = ensureLlamaCpp({ modelPath: settings.modelPath, threads: settings.threads, log });
  const sides = [
    ["kiln", () => startKiln(settings)],
    ...(base ? [["kiln (base)", () => startKiln(settings, { bin: join(base, "bin", "kiln.js") })]] : []),
    ["llama-server", () => startLlamaServer(settings, llamaCpp)],
  ];
  mkdirSync(RESULTS_DIR, { recursive: true });
  const stopBusy = busy ? startBusyCore() : undefined;
  let runs;
  try {
    runs = await runMixedPhase({ sides, levels, seconds, rounds, scratchDir: RESULTS_DIR, log });
  } finally {
    stopBusy?.();
  }
  const ignoreEos = env.IGNORE_EOS === "1";
  const result = { date: new Date().toISOString(), machine, settings: { model: settings.modelName, parallel: settings.parallel, ctxPerSequence: settings.ctxPerSequence, threads: settings.threads, levels, seconds, rounds, busy, base, ignoreEos }, runs };
  const name = join(RESULTS_DIR, `${result.date.slice(0, 10)}-${hostname()}-mixed${busy ? "-busy" : ""}`);
  // A second run on the same day gets its start time in the name rather than replacing the first.
  const file = existsSync(`${name}.md`) ? `${name}-${result.date.slice(11, 16).replace(":", "")}` : name;
  writeFileSync(`${file}.json`, `${JSON.stringify(result, null, 2)}\n`);
  writeFileSync(`${file}.md`, render(result));
  log(`wrote ${file}.md`);
}

function render(result) {
  const { machine, settings: s } = result;
  return [`# Mixed traffic, ${result.date.slice(0, 10)}`, "",
    `${machine.cpu.model}, ${s.threads} threads${s.busy ? ", one core kept busy by another process" : ""}; model ${s.model}; ${s.parallel} slots of ${s.ctxPerSequence} tokens;`
    + ` unique ~230-token prompts, ${s.ignoreEos ? "128 tokens out for every request (ignore_eos)" : "up to 128 tokens out"}, ${s.seconds} s per level.`, "",
    ...renderMixedRounds(result.runs)].join("\n") + "\n";
}

await main();
