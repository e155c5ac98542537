/**
 * `npm run bench:restart`: the restart phase alone (see lib/restart-phase.js), then the interleaved-conversations
 * phase, kiln against llama-server when it is already built (this entry never builds it). Writes
 * bench/results/<date>-<host>-restart.{json,md} (bench/.work/ with BENCH_QUICK=1).
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { readSettings } from "./lib/config.js";
import { llamaCppDir } from "./lib/llama-cpp-build.js";
import { describeMachine } from "./lib/machine.js";
import { loadDirect } from "./lib/direct.js";
import { fitSystemWords, runInterleaved } from "./lib/phases.js";
import { runRestartPhases } from "./lib/restart-phase.js";
import { renderRestartReport } from "./lib/report.js";
import { readLoadedCpuVariant } from "./lib/processes.js";
import { startKiln, startLlamaServer } from "./lib/servers.js";
import { writeResults } from "./lib/write-results.js";

const log = (line) => console.error(`[bench ${new Date().toISOString().slice(11, 19)}] ${line}`);
const dir = fileURLToPath(new URL(process.env.BENCH_QUICK === "1" ? "./.work/" : "./results/", import.meta.url));

async function main() {
  const settings = readSettings();
  const result = { date: new Date().toISOString(), settings, machine: describeMachine(), notes: [] };
  const server = join(llamaCppDir(), "build", "bin", "llama-server");
  const llamaCpp = process.env.BENCH_NO_LLAMA_SERVER !== "1" && existsSync(server) ? { server } : undefined;
  if (!llamaCpp) result.notes.push("llama-server not built (or skipped): kiln only.");
  const direct = await loadDirect(settings);
  const restartWords = fitSystemWords(direct, settings.restartPromptTokens);
  const interleavedWords = fitSystemWords(direct, 1500);
  await direct.model.dispose();
  result.restart = await runRestartPhases(settings, llamaCpp, restartWords, log);
  if (process.env.BENCH_SKIP_INTERLEAVED !== "1") {
    const p = settings.interleavedSequences;
    // kiln with the disk tier, kiln with RAM only (as before it), llama-server; each idles while another runs.
    const servers = [Object.assign(await startKiln(settings, { parallel: p }), { label: "kiln" }),
      Object.assign(await startKiln(settings, { parallel: p, extraArgs: ["--cache-disk", "0"] }), { label: "kiln (RAM only)" })];
    if (llamaCpp) servers.push(Object.assign(await startLlamaServer(settings, llamaCpp, { parallel: p }), { label: "llama-server" }));
    try {
      result.cpuVariants = Object.fromEntries(await Promise.all(servers.map(async (s) => [s.label, await readLoadedCpuVariant(s.pid)])));
      result.interleaved = await runInterleaved({ ...settings, budgetSeconds: 1e9 }, servers, interleavedWords, log);
    } finally {
      await Promise.all(servers.map((s) => s.stop()));
    }
  }
  writeResults(dir, "restart", result, renderRestartReport, log);
}

main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
