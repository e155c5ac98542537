/**
 * `npm run bench:shared-prefix`: two agents on one server with the same long system prompt, taking turns (a team's
 * two sessions of one coding agent, or an agent and its sub-agent). Each turn resends its own conversation, grown by
 * the last reply and a new user message; the time to first token and the cached tokens of every turn show whether
 * each conversation kept its cache while the other ran, and whether the second conversation's first turn reused the
 * system prompt the first one had evaluated. kiln and llama-server (same llama.cpp release and CPU kernels) with the
 * same slots, threads and context.
 *
 * Env: BENCH_TURNS (4 per conversation), BENCH_SYSTEM_WORDS (1200), BENCH_TURN_WORDS (250: the tool output each user
 * message carries), BENCH_ROUNDS (2), BENCH_KILN_ARGS (more `kiln serve` arguments for both kiln sides, e.g.
 * "--cache-disk 0"), BENCH_BUSY=1 (one core kept busy by another process), BENCH_KILN_BASE (another
 * checkout, built: added as the side "kiln (base)"), BENCH_PARALLEL (2), BENCH_CTX (4096), and bench/lib/config.js's
 * model and threads. Writes bench/results/<date>-<host>-shared-prefix.{json,md}.
 */
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { readSettings } from "./lib/config.js";
import { ensureLlamaCpp } from "./lib/llama-cpp-build.js";
import { startBusyCore } from "./lib/long-prompts.js";
import { describeMachine } from "./lib/machine.js";
import { startKiln, startLlamaServer } from "./lib/servers.js";

const RESULTS_DIR = fileURLToPath(new URL("./results/", import.meta.url));
const log = (line) => console.error(`[bench:shared-prefix ${new Date().toISOString().slice(11, 19)}] ${line}`);
const env = process.env;
const settings = readSettings({ BENCH_PARALLEL: "2", BENCH_CTX: "4096", ...env });
const turns = Number(env.BENCH_TURNS ?? 4);
const systemWords = Number(env.BENCH_SYSTEM_WORDS ?? 1200);
const turnWords = Number(env.BENCH_TURN_WORDS ?? 250);
const rounds = Number(env.BENCH_ROUNDS ?? 2);
const base = env.BENCH_KILN_BASE;
const kilnArgs = (env.BENCH_KILN_ARGS ?? "").split(" ").filter(Boolean);
const busy = env.BENCH_BUSY === "1";

const WORDS = "tool read write edit file path line search grep run shell test build commit diff patch review plan step".split(" ");
const words = (count, seed) => Array.from({ length: count }, (_, i) => WORDS[(i * 7 + seed * 11 + (i >> 4)) % WORDS.length]).join(" ");
const system = `You are a coding agent. ${words(systemWords, 0)}`;
const question = (agent, turn) => `Tool output ${agent}.${turn}: ${words(turnWords, agent * 31 + turn + 1)}\nAgent ${agent}, turn ${turn}: list three ${["files", "tests", "commands", "steps", "risks"][turn % 5]} for task ${agent}${turn} in one line each.`;

/** One streamed turn: time to first token, cached prompt tokens (when the server reports them), the reply. */
async function turn(server, messages) {
  const started = performance.now();
  const response = await fetch(`${server.baseUrl}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: "Bearer none" },
    body: JSON.stringify({ model: server.model, messages, stream: true, stream_options: { include_usage: true }, max_tokens: 48, temperature: 0 }),
  });
  if (!response.ok) throw new Error(`${response.status} ${await response.text()}`);
  let ttft;
  let reply = "";
  let cached;
  let buffered = "";
  for await (const chunk of response.body) {
    buffered += Buffer.from(chunk).toString();
    let end;
    while ((end = buffered.indexOf("\n")) >= 0) {
      const line = buffered.slice(0, end).trim();
      buffered = buffered.slice(end + 1);
      if (!line.startsWith("data: {")) continue;
      const data = JSON.parse(line.slice(6));
      const text = data.choices?.[0]?.delta?.content;
      if (text) {
        ttft ??= performance.now() - started;
        reply += text;
      }
      cached = data.usage?.prompt_tokens_details?.cached_tokens ?? data.timings?.cache_n ?? cached;
    }
  }
  return { ttft, cached, reply };
}

async function runSide(name, start) {
  const server = await start();
  try {
    const conversations = [[{ role: "system", content: system }], [{ role: "system", content: system }]];
    const rows = [];
    for (let t = 0; t < turns; t++) {
      for (const agent of [0, 1]) {
        const messages = conversations[agent];
        messages.push({ role: "user", content: question(agent, t) });
        const result = await turn(server, messages);
        messages.push({ role: "assistant", content: result.reply });
        rows.push({ agent, turn: t, ttftMs: Math.round(result.ttft), cached: result.cached });
        log(`${name}: agent ${agent} turn ${t}: TTFT ${Math.round(result.ttft)} ms, cached ${result.cached}`);
      }
    }
    return { side: name, cpuVariant: server.cpuVariant, rows };
  } finally {
    await server.stop();
  }
}

async function main() {
  const machine = describeMachine();
  const llamaCpp = ensureLlamaCpp({ modelPath: settings.modelPath, threads: settings.threads, log });
  const sides = [
    ["kiln", () => startKiln(settings, { extraArgs: kilnArgs })],
    ...(base ? [["kiln (base)", () => startKiln(settings, { bin: join(base, "bin", "kiln.js"), extraArgs: kilnArgs })]] : []),
    ["llama-server", () => startLlamaServer(settings, llamaCpp)],
  ];
  const runs = [];
  const stopBusy = busy ? startBusyCore() : undefined;
  try {
    for (let round = 0; round < rounds; round++) {
      const order = round % 2 ? [...sides].reverse() : sides;
      for (const [name, start] of order) runs.push({ round: round + 1, ...(await runSide(name, start)) });
    }
  } finally {
    stopBusy?.();
  }
  const result = { date: new Date().toISOString(), machine, settings: { model: settings.modelName, parallel: settings.parallel, ctxPerSequence: settings.ctxPerSequence, threads: settings.threads, turns, systemWords, turnWords, rounds, base, kilnArgs, busy }, runs };
  mkdirSync(RESULTS_DIR, { recursive: true });
  const name = join(RESULTS_DIR, `${result.date.slice(0, 10)}-${hostname()}-shared-prefix${busy ? "-busy" : ""}`);
  const file = existsSync(`${name}.md`) ? `${name}-${result.date.slice(11, 16).replace(":", "")}` : name;
  writeFileSync(`${file}.json`, `${JSON.stringify(result, null, 2)}\n`);
  writeFileSync(`${file}.md`, render(result));
  log(`wrote ${file}.md`);
}

function render({ date, machine, settings: s, runs }) {
  const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
  const lines = [`# Two agents sharing a system prompt, ${date.slice(0, 10)}`, "",
    `${machine.cpu.model}, ${s.threads} threads${s.busy ? ", one core kept busy by another process" : ""}; model ${s.model}; ${s.parallel} slots of ${s.ctxPerSequence} tokens; a system prompt of`
    + ` ${s.systemWords} words, two conversations taking turns (${s.turns} each), each turn adding a user message of ${s.turnWords} words of tool output`
    + ` and a reply of 48 tokens at temperature 0, streamed${s.kilnArgs.length ? `; kiln started with \`${s.kilnArgs.join(" ")}\`` : ""}.`, "",
    "| round | server (CPU variant) | TTFT ms per turn (agent 0, agent 1, …) | cached tokens per turn | TTFT p50 ms, turns after the first |",
    "| --- | --- | --- | --- | --- |"];
  for (const run of runs) {
    const later = run.rows.slice(1).map((row) => row.ttftMs);
    lines.push(`| ${run.round} | ${run.side} (${run.cpuVariant ?? "?"}) | ${run.rows.map((row) => row.ttftMs).join(", ")} | ${run.rows.map((row) => row.cached ?? "–").join(", ")} | ${median(later)} |`);
  }
  return `${lines.join("\n")}\n`;
}

await main();
