/**
 * The mixed-traffic phase (`npm run bench:mixed`, and the `mixed` phase of `npm run bench`): many clients, every
 * prompt unique (about 230 tokens of the default model, so the prefix cache cannot skip it), 128 tokens out at
 * temperature 0.8, streamed, at rising client levels and then a lower one again (the history check: the same level
 * after a different one), each side alone in turn, in rounds with the sides in rotated order.
 */
import { existsSync, readFileSync, rmSync } from "node:fs";
import { spawn } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { perStep, readStepTotals } from "./step-figures.js";

const LOAD_CLIENT = fileURLToPath(new URL("./stream-load.mjs", import.meta.url));

/**
 * Runs every side at every level, `rounds` times with the sides rotated; returns the runs.
 * @param {{ sides: Array<[string, () => Promise<any>]>, levels: string, seconds: number, rounds: number, scratchDir: string, log: (line: string) => void }} options
 */
export async function runMixedPhase({ sides, levels, seconds, rounds, scratchDir, log }) {
  const runs = [];
  for (let round = 0; round < rounds; round++) {
    const order = sides.map((_, i) => sides[(i + round) % sides.length]);
    for (const [label, start] of order) {
      const server = await start();
      log(`mixed round ${round + 1}: ${label} ready (CPU variant ${server.cpuVariant ?? "unknown"})`);
      try {
        // A short unmeasured load first: every side starts warm (threads, caches, the first allocations).
        await runLoad(server, `${label} (warm-up)`, scratchDir, { levels: "2", seconds: 3 });
        const rows = await runLoad(server, label, scratchDir, { levels, seconds });
        const totals = label.startsWith("kiln") ? await readStepTotals(server) : undefined;
        const steps = totals && perStep(totals);
        for (const row of rows) log(`${label} ${row.clients} clients: ${row.outputTokPerS} tok/s, TTFT p50 ${row.ttftP50ms} ms, ITL p50 ${row.itlP50ms} ms`);
        runs.push({ round: round + 1, side: label, cpuVariant: server.cpuVariant, rows, steps });
      } finally {
        await server.stop();
      }
    }
  }
  return runs;
}

/** Runs the load client against one started server; returns its rows. */
function runLoad(server, tag, scratchDir, { levels, seconds }) {
  const out = join(scratchDir, `.mixed-${process.pid}.jsonl`);
  rmSync(out, { force: true });
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [LOAD_CLIENT], {
      stdio: ["ignore", "ignore", "inherit"],
      env: { ...process.env, URL: server.baseUrl, MODEL: server.model, LEVELS: levels, DURATION: String(seconds), MAX_TOKENS: "128", LONG_WORDS: "0", TAG: tag, JSON_OUT: out, REQUEST_TIMEOUT: "600" },
    });
    child.on("error", reject);
    child.on("exit", () => {
      const rows = existsSync(out) ? readFileSync(out, "utf8").trim().split("\n").filter(Boolean).map((line) => JSON.parse(line)) : [];
      rmSync(out, { force: true });
      resolve(rows);
    });
  });
}

/** One table per round: each level (in the order run) on every side, and each kiln side ÷ llama-server. */
export function renderMixedRounds(runs) {
  const lines = [];
  for (const round of [...new Set(runs.map((r) => r.round))]) {
    const inRound = runs.filter((r) => r.round === round);
    const peer = inRound.find((r) => r.side === "llama-server");
    const others = inRound.filter((r) => r !== peer);
    lines.push(`### Round ${round} (order: ${inRound.map((r) => r.side).join(", ")}; CPU variants: ${inRound.map((r) => `${r.side} ${r.cpuVariant ?? "?"}`).join(", ")})`, "",
      `| level | ${inRound.map((r) => `${r.side} tok/s | TTFT p50 ms`).join(" | ")} |${peer ? ` ${others.map((r) => `${r.side} ÷ llama-server`).join(" | ")} |` : ""}`,
      `| --- |${inRound.map(() => " --- | --- |").join("")}${peer ? others.map(() => " --- |").join("") : ""}`);
    const levels = (peer ?? inRound[0]).rows;
    levels.forEach((level, i) => {
      const cells = inRound.map((r) => `${r.rows[i]?.outputTokPerS ?? "–"} | ${r.rows[i]?.ttftP50ms ?? "–"}`);
      const ratios = peer ? others.map((r) => (r.rows[i] && peer.rows[i] ? (r.rows[i].outputTokPerS / peer.rows[i].outputTokPerS).toFixed(2) : "–")) : [];
      const repeated = levels.slice(0, i).some((row) => row.clients === level.clients);
      lines.push(`| ${level.clients}${repeated ? ` (after ${levels[i - 1].clients})` : ""} | ${cells.join(" | ")} |${peer ? ` ${ratios.join(" | ")} |` : ""}`);
    });
    for (const r of inRound.filter((run) => run.steps)) {
      const st = r.steps;
      lines.push("", `${r.side}: ${st.steps} decode steps, ${st.tokensPerStep.toFixed(1)} tokens per step, ${st.computeMsPerStep.toFixed(2)} ms compute and ${st.hostMsPerStep.toFixed(2)} ms host per step.`);
    }
    lines.push("");
  }
  return lines;
}
