/**
 * `npm run bench`: one run that measures node-llama-cpp in-process, kiln over HTTP and llama-server with the same
 * threads, context and parallel settings, then writes bench/results/<date>-<host>.{json,md}.
 * BENCH_QUICK=1 runs a shortened version and writes to bench/.work/ instead (not for committing).
 */
import { existsSync, mkdirSync, statSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { fileURLToPath } from "node:url";
import { replayAgentTurns } from "./lib/agent-trace.js";
import { agentSystemPrompt } from "./lib/prompts.js";
import { measureBandwidth, rooflineTokensPerSecond } from "./lib/bandwidth.js";
import { isOverBudget, readSettings } from "./lib/config.js";
import { loadDirect } from "./lib/direct.js";
import { ensureLlamaCpp } from "./lib/llama-cpp-build.js";
import { describeMachine } from "./lib/machine.js";
import { runLongPrompts } from "./lib/long-prompts.js";
import { runMixedPhase } from "./lib/mixed-phase.js";
import { fitSystemWords, runAgentTraces, runInterleaved, runSingleStream, runSweep } from "./lib/phases.js";
import { computeRatios } from "./lib/ratios.js";
import { renderReport } from "./lib/report.js";
import { runRestartPhases } from "./lib/restart-phase.js";
import { startKiln, startLlamaServer } from "./lib/servers.js";

const WORK_DIR = fileURLToPath(new URL("./.work/", import.meta.url));
const RESULTS_DIR = fileURLToPath(new URL("./results/", import.meta.url));
const log = (line) => console.error(`[bench ${new Date().toISOString().slice(11, 19)}] ${line}`);

/** Starts a server, or records why it could not start and returns undefined (the run goes on without it). */
async function tryStart(label, start, notes) {
  try {
    const server = await start();
    log(`${label} ready on ${server.baseUrl} (CPU variant ${server.cpuVariant ?? "unknown"})`);
    return Object.assign(server, { label });
  } catch (error) {
    notes.push(`${label} could not be started: ${String(error.message).split("\n")[0]}`);
    log(`${label} failed to start: ${error.message.slice(0, 2000)}`);
    return undefined;
  }
}

async function stopAll(servers) {
  await Promise.all(servers.filter(Boolean).map((s) => s.stop()));
}

async function main() {
  const settings = readSettings();
  if (!existsSync(settings.modelPath)) throw new Error(`model not found at ${settings.modelPath}: run \`npm run setup\` first`);
  const started = Date.now();
  const notes = [];
  const result = { date: new Date().toISOString(), settings, machine: describeMachine(), notes };
  log(`machine: ${result.machine.cpu.model}, flags ${result.machine.cpu.flags.join(" ")}`);
  if (process.env.BENCH_NO_LLAMA_SERVER === "1") notes.push("llama-server skipped (BENCH_NO_LLAMA_SERVER=1).");
  else result.llamaCpp = ensureLlamaCpp({ modelPath: settings.modelPath, threads: settings.threads, log });
  const startPeer = (options, peerSettings = settings) => (result.llamaCpp ? startLlamaServer(peerSettings, result.llamaCpp, options) : Promise.reject(new Error("skipped")));
  const bandwidthGBs = measureBandwidth(WORK_DIR, [...new Set([1, settings.threads])], { passes: settings.quick ? 2 : 5 });
  log(`bandwidth: ${JSON.stringify(bandwidthGBs)} GB/s`);

  const direct = await loadDirect(settings);
  log(`node-llama-cpp loaded (CPU variant ${direct.cpuVariant})`);
  const systemWords = fitSystemWords(direct, 1500);
  result.agentSystemTokens = direct.model.tokenize(agentSystemPrompt(systemWords)).length;

  let servers = [];
  try {
    if (settings.phases.includes("core")) await runCorePhases(settings, direct, result, startPeer, notes, systemWords);
    if (settings.phases.includes("long")) {
      // Two sequences, each large enough for the longest prompt plus a stream.
      // llama-server caps a slot at the model's training context (8,192 tokens for the default model), so the
      // prompt another client sends during a stream is sized to fit it, with room for the answer.
      const itlPromptTokens = Math.min(settings.itlPromptTokens, direct.model.trainContextSize - 1024);
      if (itlPromptTokens < settings.itlPromptTokens) notes.push(`ITL and disconnect prompt: ${itlPromptTokens} tokens (the model's training context is ${direct.model.trainContextSize}).`);
      const longSettings = { ...settings, itlPromptTokens, parallel: 2, ctxPerSequence: Math.max(...settings.longPromptLengths, itlPromptTokens) + 2048 };
      servers = [await tryStart("kiln", () => startKiln(longSettings), notes),
        await tryStart("llama-server", () => startPeer({ parallel: 2 }, longSettings), notes)].filter(Boolean);
      result.longPrompts = { settings: { parallel: 2, ctxPerSequence: longSettings.ctxPerSequence, disconnectAfterMs: settings.disconnectAfterMs, itlStreamTokens: settings.itlStreamTokens },
        ...(await runLongPrompts(longSettings, direct, servers, log)) };
      result.longPrompts.cpuVariants = Object.fromEntries([["node-llama-cpp direct", direct.cpuVariant], ...servers.map((s) => [s.label, s.cpuVariant])]);
      await stopAll(servers);
      servers = [];
    }
    if (settings.phases.includes("mixed")) result.mixed = await runMixed(settings, startPeer);
  } finally {
    await stopAll(servers);
    await direct.model.dispose();
  }

  const modelBytes = statSync(settings.modelPath).size;
  const directGen = result.singleStream?.find((s) => s.side === "node-llama-cpp direct")?.generationTokensPerSecond;
  result.roofline = { bandwidthGBs, modelBytes, ceilingTokensPerSecond: rooflineTokensPerSecond(bandwidthGBs[settings.threads], modelBytes),
    directGenerationTokensPerSecond: directGen };
  result.ratios = computeRatios(result);
  if (settings.phases.includes("core") && isOverBudget(settings)) notes.push(`The ${settings.budgetSeconds} s budget ran out: later repeats, levels, turns or phases were skipped.`);
  result.loadAverageAtEnd = loadavg().map((v) => Math.round(v * 100) / 100);
  result.durationSeconds = Math.round((Date.now() - started) / 1000);
  writeResults(result, settings.quick ? WORK_DIR : RESULTS_DIR);
}

/** Single stream, concurrency sweep, agent traces and interleaved conversations (each starts and stops its servers). */
async function runCorePhases(settings, direct, result, startPeer, notes, systemWords) {
  let servers = [];
  try {
    servers = [await tryStart("kiln", () => startKiln(settings), notes),
      await tryStart("llama-server", () => startPeer({}), notes)].filter(Boolean);
    result.singleStream = await runSingleStream(settings, direct, servers, log);
    result.sweep = await runSweep(settings, direct, servers, log);
    const traceTargets = servers.map((s) => Object.assign(Object.create(s), { label: s.label === "kiln" ? "kiln (prefix cache)" : s.label }));
    result.agentTrace = await runAgentTraces(settings, traceTargets, systemWords, log);
    await stopAll(servers);
    servers = [];
    if (!isOverBudget(settings)) {
      servers = [await tryStart("kiln (no prefix cache)", () => startKiln(settings, { prefixCache: false }), notes)].filter(Boolean);
      const recorded = result.agentTrace["kiln (prefix cache)"] ?? [];
      const turns = settings.noCacheTurns ?? recorded.map((t) => t.turn);
      if (servers[0]) {
        const replayed = await replayAgentTurns(servers[0], settings, recorded, turns);
        result.agentTrace["kiln (no prefix cache)"] = recorded.map((r) => replayed.find((x) => x.turn === r.turn));
        log(`agent trace kiln (no prefix cache), turns ${turns.join(",")}: TTFT ${replayed.map((t) => t.ttftMs.toFixed(0)).join(" ")} ms`);
      }
      await stopAll(servers);
      servers = [];
    }
    const p = settings.interleavedSequences;
    if (!isOverBudget(settings)) {
      servers = [await tryStart("kiln", () => startKiln(settings, { parallel: p }), notes),
        await tryStart("llama-server", () => startPeer({ parallel: p }), notes)].filter(Boolean);
      result.interleaved = await runInterleaved(settings, servers, systemWords, log);
    }
    await stopAll(servers);
    servers = [];
    if (!isOverBudget(settings)) result.restart = await runRestartPhases(settings, result.llamaCpp, fitSystemWords(direct, settings.restartPromptTokens), log);
  } finally {
    await stopAll(servers);
  }
}

/** Many clients with unique prompts, 1,024 tokens of context each, on kiln and llama-server (bench/lib/mixed-phase.js). */
async function runMixed(settings, startPeer) {
  const mixedSettings = { ...settings, parallel: settings.mixedParallel, ctxPerSequence: 1024 };
  const sides = [["kiln", () => startKiln(mixedSettings)],
    ...(process.env.BENCH_NO_LLAMA_SERVER === "1" ? [] : [["llama-server", () => startPeer({}, mixedSettings)]])];
  const runs = await runMixedPhase({ sides, levels: settings.mixedLevels, seconds: settings.mixedSeconds, rounds: settings.mixedRounds, scratchDir: WORK_DIR, log });
  return { settings: { parallel: mixedSettings.parallel, ctxPerSequence: 1024, levels: settings.mixedLevels, seconds: settings.mixedSeconds, rounds: settings.mixedRounds }, runs };
}

function writeResults(result, dir) {
  mkdirSync(dir, { recursive: true });
  for (const turns of [...Object.values(result.agentTrace ?? {}), ...Object.values(result.interleaved ?? {})]) {
    for (const t of turns) if (t) delete t.sent;
  }
  const tag = process.env.BENCH_TAG ? `-${process.env.BENCH_TAG.replace(/[^\w.-]/g, "")}` : "";
  const base = `${dir}${result.date.slice(0, 10)}-${result.machine.host}${tag}`;
  const markdown = renderReport(result);
  writeFileSync(`${base}.json`, `${JSON.stringify(result, null, 2)}\n`);
  writeFileSync(`${base}.md`, markdown);
  console.log(markdown);
  log(`wrote ${base}.json and ${base}.md in ${result.durationSeconds} s`);
}

main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
