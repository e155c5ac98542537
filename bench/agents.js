#!/usr/bin/env node
/**
 * `npm run bench:agents`: real coding agents, unchanged (full default prompt and tools, no forced tool_choice), run
 * through `kiln launch` on small tasks, each in a fresh git repository at the same path per agent; per agent × model × task it records success
 * (checked on the files and by running them), requests, tokens, cached tokens, TTFT per request, total time and
 * every error the server logged. The first run starts kiln in the background; later runs reuse it (and its cache).
 *
 *   node bench/agents.js --agents claude,codex --tasks create,fix-test --model <ref> [--timeout-min 40] [--name x]
 *     [--port 5499] [--server-log <file> of a kiln already serving there] [--keep: leave the server running]
 * Agents are found on PATH (plus KILN_AGENTS_PATH); results go to bench/results/<date>-agents[-name].{json,md}.
 */
import { execFileSync, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, dirname, join } from "node:path";
import { parseArgs } from "node:util";
import { agentArguments, answerOf } from "./lib/agent-commands.js";
import { TASKS } from "./lib/agent-tasks.js";
import { describeMachine } from "./lib/machine.js";
import { readLogEntries, summarizeEntries } from "./lib/server-log.js";

const root = join(dirname(new URL(import.meta.url).pathname), "..");
const { values } = parseArgs({
  options: {
    agents: { type: "string", default: "claude" },
    tasks: { type: "string", default: TASKS.map((t) => t.name).join(",") },
    model: { type: "string", default: "qwen2.5-coder-0.5b" },
    port: { type: "string", default: "5499" },
    "timeout-min": { type: "string", default: "40" },
    name: { type: "string" },
    keep: { type: "boolean", default: false },
    "server-log": { type: "string" },
  },
});
const url = `http://127.0.0.1:${values.port}`;
const home = join(tmpdir(), "kiln-bench-agents-home");
mkdirSync(home, { recursive: true });
const path = [process.env.KILN_AGENTS_PATH, join(root, "node_modules", ".bin"), process.env.PATH].filter(Boolean).join(delimiter);
const env = { ...process.env, PATH: path, KILN_HOME: home };
// A server kiln launch starts logs here; one already running on --port logs where it was told (--server-log).
const serverLog = values["server-log"] ?? join(home, "launch", "serve.log");

/** `<binary> --version`, first line. */
function versionOf(agent) {
  try {
    return execFileSync(agent, ["--version"], { env, encoding: "utf8", timeout: 60_000 }).trim().split("\n")[0];
  } catch {
    return "not installed";
  }
}

/**
 * A fresh, empty folder at a fixed path per agent: agents put their working directory and home in their prompt
 * (Claude Code names both near its start), so a new random path per task would make every task's prompt differ from
 * its first few hundred tokens and defeat the prefix cache that an agent used in one place enjoys.
 */
function freshFolder(agent, name) {
  const dir = join(tmpdir(), `kiln-agent-${agent}`, name);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  return dir;
}

function seedRepository(agent, task) {
  const dir = freshFolder(agent, "repo");
  for (const [file, content] of Object.entries(task.files)) writeFileSync(join(dir, file), content);
  const git = (...args) => execFileSync("git", args, { cwd: dir, stdio: "ignore" });
  git("init", "-q");
  git("add", "-A");
  git("-c", "user.email=bench@kiln", "-c", "user.name=bench", "commit", "-q", "--allow-empty", "-m", "seed");
  return dir;
}

/** Runs one agent on one task through kiln launch; resolves with the run's record. */
async function runTask(agent, task) {
  const dir = seedRepository(agent, task);
  const agentHome = freshFolder(agent, "home");
  const output = mkdtempSync(join(tmpdir(), `kiln-agent-${agent}-${task.name}-`));
  const { next: logFrom } = readLogEntries(serverLog);
  const stdoutPath = join(output, "stdout.txt");
  const stderrPath = join(output, "stderr.txt");
  const args = [join(root, "bin", "kiln.js"), "launch", agent, "--url", url, "--model", values.model, "--", ...agentArguments(agent, task)];
  const started = performance.now();
  const child = spawn(process.execPath, args, { cwd: dir, env: { ...env, HOME: agentHome, PWD: dir }, stdio: ["ignore", openSync(stdoutPath, "w"), openSync(stderrPath, "w")], detached: true });
  const limit = Number(values["timeout-min"]) * 60_000;
  let timedOut = false;
  const timer = setTimeout(() => { timedOut = true; process.kill(-child.pid, "SIGTERM"); }, limit);
  const code = await new Promise((resolve) => child.once("exit", (c) => resolve(c ?? -1)));
  clearTimeout(timer);
  const totalMs = Math.round(performance.now() - started);
  const stdout = readFileSync(stdoutPath, "utf8");
  const check = task.check(dir, answerOf(agent, stdout));
  const server = summarizeEntries(agent, readLogEntries(serverLog, logFrom).entries);
  return { agent, task: task.name, model: values.model, success: check.success, detail: check.detail, exitCode: code, timedOut, totalMs, ...server, output };
}

function renderMarkdown(result) {
  const rows = result.runs.map((r) => `| ${r.agent} | ${r.model} | ${r.task} | ${r.success ? "yes" : "no"} | ${r.turns} | ${r.inputTokens} / ${r.outputTokens} | ${r.cachedInputTokens} | ${r.ttftMs.map((t) => (t === null ? "–" : (t / 1000).toFixed(1))).join(", ")} | ${(r.totalMs / 1000).toFixed(0)} | ${r.errors.length ? r.errors.map((e) => `${e.status} ${e.error ?? ""}`.trim()).join("; ") : "none"} | ${r.timedOut ? "timed out; " : ""}${r.detail.replace(/\s+/g, " ").slice(-160)} |`);
  return [
    `# Agents on kiln — ${result.date}`,
    "",
    `Machine: ${result.machine.cpu?.model ?? "unknown"}, ${result.machine.logicalCpus ?? "?"} cores (shared, noisy). Agents: ${Object.entries(result.versions).map(([a, v]) => `${a} ${v}`).join(", ")}.`,
    "",
    "| agent | model | task | success | requests | tokens in / out | cached | TTFT per request (s) | total (s) | server errors | check |",
    "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ...rows,
    "",
  ].join("\n");
}

const agents = values.agents.split(",");
const tasks = values.tasks.split(",").map((name) => TASKS.find((t) => t.name === name) ?? (() => { throw new Error(`unknown task ${name}`); })());
const result = { date: new Date().toISOString(), machine: describeMachine(), versions: Object.fromEntries(agents.map((a) => [a, versionOf(a)])), runs: [] };
const base = join(root, "bench", "results", `${result.date.slice(0, 10)}-agents${values.name ? `-${values.name}` : ""}`);
try {
  for (const agent of agents) {
    for (const task of tasks) {
      const run = await runTask(agent, task);
      result.runs.push(run);
      console.log(`${agent} ${task.name}: ${run.success ? "ok" : "FAILED"} in ${(run.totalMs / 1000).toFixed(0)} s, ${run.turns} requests, errors ${run.errors.length} (${run.detail})`);
      writeFileSync(`${base}.json`, `${JSON.stringify(result, null, 2)}\n`);
      writeFileSync(`${base}.md`, renderMarkdown(result));
    }
  }
} finally {
  if (!values.keep) execFileSync(process.execPath, [join(root, "bin", "kiln.js"), "launch", "--stop"], { env, stdio: "inherit" });
}
