/**
 * `npm run bench:mixed`: a team's mixed traffic. Many clients, every prompt unique (about 230 tokens of the default
 * model, so the prefix cache cannot skip it), 128 tokens out at temperature 0.8, streamed: kiln and llama-server
 * (same llama.cpp release and CPU kernels, bench/lib/llama-cpp-build.js) with the same slots, threads and context,
 * one after the other at levels 1, 8, 16 and 32 clients and 8 again (the history check: the same level after a
 * different one), in rounds with the sides in rotated order. On 2 CPU cores the 135M default model stands in for a
 * GPU: its compute per step is small, so host work and step planning show as they do on a GPU.
 *
 * Env: BENCH_MIXED_LEVELS ("1,8,16,32,8"), BENCH_MIXED_SECONDS (per level, 20), BENCH_MIXED_ROUNDS (2),
 * BENCH_MIXED_BUSY=1 (one core kept busy by another process), BENCH_KILN_BASE (another checkout, built: added as
 * the side "kiln (base)"), BENCH_PARALLEL (32), BENCH_CTX (1024), and bench/lib/config.js's model and threads.
 * Writes bench/results/<date>-<host>-mixed[-busy].{json,md}.
 */
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { readSettings } from "./lib/config.js";
import { ensureLlamaCpp } from "./lib/llama-cpp-build.js";
import { startBusyCore } from "./lib/long-prompts.js";
import { describeMachine } from "./lib/machine.js";
import { startKiln, startLlamaServer } from "./lib/servers.js";

const RESULTS_DIR = fileURLToPath(new URL("./results/", import.meta.url));
const LOAD_CLIENT = fileURLToPath(new URL("./lib/stream-load.mjs", import.meta.url));
const log = (line) => console.error(`[bench:mixed ${new Date().toISOString().slice(11, 19)}] ${line}`);

const env = process.env;
const settings = readSettings({ BENCH_PARALLEL: "32", BENCH_CTX: "1024", ...env });
const levels = env.BENCH_MIXED_LEVELS ?? "1,8,16,32,8";
const seconds = Number(env.BENCH_MIXED_SECONDS ?? 20);
const rounds = Number(env.BENCH_MIXED_ROUNDS ?? 2);
const busy = env.BENCH_MIXED_BUSY === "1";
const base = env.BENCH_KILN_BASE;

/** Runs the load client against one started server; returns its rows. */
function runLoad(server, tag, { levels: run = levels, seconds: each = seconds } = {}) {
  const out = join(RESULTS_DIR, `.mixed-${process.pid}.jsonl`);
  rmSync(out, { force: true });
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [LOAD_CLIENT], {
      stdio: ["ignore", "ignore", "inherit"],
      env: { ...env, URL: server.baseUrl, MODEL: server.model, LEVELS: run, DURATION: String(each), MAX_TOKENS: "128", LONG_WORDS: "0", TAG: tag, JSON_OUT: out, REQUEST_TIMEOUT: "600" },
    });
    child.on("error", reject);
    child.on("exit", () => {
      const rows = existsSync(out) ? readFileSync(out, "utf8").trim().split("\n").filter(Boolean).map((line) => JSON.parse(line)) : [];
      rmSync(out, { force: true });
      resolve(rows);
    });
  });
}

/** Kiln's decode steps from /metrics: host and compute milliseconds per step over the run. */
async function stepFigures(server) {
  const text = await (await fetch(`${server.baseUrl}/metrics`)).text().catch(() => "");
  const value = (pattern) => Number(new RegExp(`^${pattern} ([\\d.e+-]+)$`, "m").exec(text)?.[1] ?? Number.NaN);
  const steps = value('kiln_decode_steps_total\\{model="[^"]*"\\}');
  if (!(steps > 0)) return undefined; // a kiln without the step clock
  return {
    steps,
    tokensPerStep: value('kiln_decode_step_tokens_total\\{model="[^"]*"\\}') / steps,
    computeMsPerStep: (1000 * value('kiln_decode_step_seconds_total\\{model="[^"]*",part="compute"\\}')) / steps,
    hostMsPerStep: (1000 * value('kiln_decode_step_seconds_total\\{model="[^"]*",part="host"\\}')) / steps,
  };
}

async function main() {
  const machine = describeMachine();
  const llamaCpp = ensureLlamaCpp({ modelPath: settings.modelPath, threads: settings.threads, log });
  const sides = [
    ["kiln", () => startKiln(settings)],
    ...(base ? [["kiln (base)", () => startKiln(settings, { bin: join(base, "bin", "kiln.js") })]] : []),
    ["llama-server", () => startLlamaServer(settings, llamaCpp)],
  ];
  const stopBusy = busy ? startBusyCore() : undefined;
  const runs = [];
  try {
    for (let round = 0; round < rounds; round++) {
      const order = sides.map((_, i) => sides[(i + round) % sides.length]);
      for (const [label, start] of order) {
        const server = await start();
        log(`round ${round + 1}: ${label} ready (CPU variant ${server.cpuVariant ?? "unknown"})`);
        try {
          // A short unmeasured load first: every side starts warm (threads, caches, the first allocations).
          await runLoad(server, `${label} (warm-up)`, { levels: "2", seconds: 3 });
          const rows = await runLoad(server, label);
          const steps = label.startsWith("kiln") ? await stepFigures(server) : undefined;
          for (const row of rows) log(`${label} ${row.clients} clients: ${row.outputTokPerS} tok/s, TTFT p50 ${row.ttftP50ms} ms, ITL p50 ${row.itlP50ms} ms`);
          runs.push({ round: round + 1, side: label, cpuVariant: server.cpuVariant, rows, steps });
        } finally {
          await server.stop();
        }
      }
    }
  } finally {
    stopBusy?.();
  }
  const result = { date: new Date().toISOString(), machine, settings: { model: settings.modelName, parallel: settings.parallel, ctxPerSequence: settings.ctxPerSequence, threads: settings.threads, levels, seconds, rounds, busy, base }, runs };
  mkdirSync(RESULTS_DIR, { recursive: true });
  const file = join(RESULTS_DIR, `${result.date.slice(0, 10)}-${hostname()}-mixed${busy ? "-busy" : ""}`);
  writeFileSync(`${file}.json`, `${JSON.stringify(result, null, 2)}\n`);
  writeFileSync(`${file}.md`, render(result));
  log(`wrote ${file}.md`);
}

/** One table per round: each level (in the order run) on every side, and kiln ÷ llama-server. */
function render(result) {
  const { machine, settings: s } = result;
  const lines = [`# Mixed traffic, ${result.date.slice(0, 10)}`, "",
    `${machine.cpu.model}, ${s.threads} threads${s.busy ? ", one core kept busy by another process" : ""}; model ${s.model}; ${s.parallel} slots of ${s.ctxPerSequence} tokens;`
    + ` unique ~230-token prompts, 128 tokens out, ${s.seconds} s per level.`, ""];
  for (const round of [...new Set(result.runs.map((r) => r.round))]) {
    const runs = result.runs.filter((r) => r.round === round);
    const peer = runs.find((r) => r.side === "llama-server");
    lines.push(`## Round ${round} (order: ${runs.map((r) => r.side).join(", ")}; CPU variants: ${runs.map((r) => `${r.side} ${r.cpuVariant ?? "?"}`).join(", ")})`, "",
      `| level | ${runs.map((r) => `${r.side} tok/s | TTFT p50 ms`).join(" | ")} | ${runs.filter((r) => r !== peer).map((r) => `${r.side} ÷ llama-server`).join(" | ")} |`,
      `| --- |${runs.map(() => " --- | --- |").join("")}${runs.filter((r) => r !== peer).map(() => " --- |").join("")}`);
    peer?.rows.forEach((_, i) => {
      const cells = runs.map((r) => `${r.rows[i]?.outputTokPerS ?? "–"} | ${r.rows[i]?.ttftP50ms ?? "–"}`);
      const ratios = runs.filter((r) => r !== peer).map((r) => (r.rows[i] && peer.rows[i] ? (r.rows[i].outputTokPerS / peer.rows[i].outputTokPerS).toFixed(2) : "–"));
      const repeated = peer.rows.slice(0, i).some((row) => row.clients === peer.rows[i].clients);
      lines.push(`| ${peer.rows[i].clients}${repeated ? ` (after ${peer.rows[i - 1].clients})` : ""} | ${cells.join(" | ")} | ${ratios.join(" | ")} |`);
    });
    for (const r of runs.filter((run) => run.steps)) {
      const st = r.steps;
      lines.push("", `${r.side}: ${st.steps} decode steps, ${st.tokensPerStep.toFixed(1)} tokens per step, ${st.computeMsPerStep.toFixed(2)} ms compute and ${st.hostMsPerStep.toFixed(2)} ms host per step.`);
    }
    lines.push("");
  }
  return `${lines.join("\n")}\n`;
}

await main();
