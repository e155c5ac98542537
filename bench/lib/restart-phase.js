/**
 * The restart phase: a Claude-Code-shaped session — a long system prompt with tool schemas, resent every turn — on a
 * server whose cache starts empty: the cold first turn, the second turn (RAM cache), then the server restarts and a
 * new session's first turn (same system prompt and tools, a new question) shows what survived: kiln's disk tier.
 * llama-server runs the same session; across its restart it gets slot 0 back through its slot save/restore API
 * (`--slot-save-path`, saved after the last turn and restored before the new session: a client must ask for both).
 *
 * `npm run bench:restart` runs it alone (see bench/restart.js).
 */
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { agentSystemPrompt, agentTurn } from "./prompts.js";
import { streamChat } from "./sse-client.js";
import { startKiln, startLlamaServer } from "./servers.js";

const ANSWER_TOKENS = 16;

/** The session's requests: turn 1 and 2 of session 1, then turn 1 of session 2 (after the restart). */
function sessionMessages(systemWords) {
  const system = { role: "system", content: agentSystemPrompt(systemWords) };
  const first = (session) => ({ role: "user", content: `Session ${session}: ${agentTurn(session, 1).user}` });
  return { system, first };
}

async function send(server, settings, messages) {
  const t = await streamChat(server.baseUrl, {
    model: server.model, messages, maxTokens: ANSWER_TOKENS, extra: server.extra, timeoutMs: settings.restartTimeoutMs ?? 1_800_000,
  });
  return { ttftMs: t.ttftMs, promptTokens: t.promptTokens, cachedTokens: t.cachedTokens, text: t.text };
}

/**
 * Runs the session on one side. `start()` starts the server (the same cache folder each time), `afterSession` and
 * `beforeSession` are the peer's save/restore calls.
 */
async function runSession(settings, { start, afterSession, beforeSession }, systemWords, log, label) {
  const { system, first } = sessionMessages(systemWords);
  let server = await start();
  const turns = { cpuVariant: server.cpuVariant };
  try {
    const opening = [system, first(1)];
    turns.cold = await send(server, settings, opening);
    log(`restart ${label}: cold first turn ${turns.cold.ttftMs.toFixed(0)} ms (${turns.cold.promptTokens} tokens)`);
    const { toolCall, toolResult } = agentTurn(1, 2);
    turns.ram = await send(server, settings, [...opening, { role: "assistant", content: turns.cold.text },
      { role: "user", content: `${toolCall}\n${toolResult}` }]);
    log(`restart ${label}: second turn ${turns.ram.ttftMs.toFixed(0)} ms (${turns.ram.cachedTokens} cached)`);
    const saveStarted = performance.now();
    await afterSession?.(server);
    turns.saveMs = performance.now() - saveStarted;
    await server.stop();
    const restarted = performance.now();
    server = await start();
    turns.startMs = performance.now() - restarted;
    const restoreStarted = performance.now();
    await beforeSession?.(server);
    turns.restoreMs = performance.now() - restoreStarted;
    turns.afterRestart = await send(server, settings, [system, first(2)]);
    turns.afterRestartOverCold = turns.afterRestart.ttftMs / turns.cold.ttftMs;
    log(`restart ${label}: first turn after restart ${turns.afterRestart.ttftMs.toFixed(0)} ms (${turns.afterRestart.cachedTokens} cached), ${(100 * turns.afterRestartOverCold).toFixed(1)}% of cold`);
  } finally {
    await server.stop();
  }
  for (const t of [turns.cold, turns.ram, turns.afterRestart]) if (t) delete t.text;
  return turns;
}

/** llama-server's slot save/restore calls (POST /slots/0?action=save|restore). */
async function slotAction(server, action, filename) {
  const res = await fetch(`${server.baseUrl}/slots/0?action=${action}`, {
    method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ filename }),
  });
  if (!res.ok) throw new Error(`llama-server slot ${action}: HTTP ${res.status} ${await res.text()}`);
  return res.json();
}

/**
 * The phase for one model (`model`: { name, path }) on kiln and, when built, llama-server; each with one sequence and
 * a fresh cache folder.
 * @param {import("./config.js").Settings} settings
 */
export async function runRestartPhase(settings, llamaCpp, model, systemWords, log) {
  const out = { model: model.name, systemWords };
  const home = mkdtempSync(join(tmpdir(), "kiln-bench-restart-"));
  try {
    const kiln = () => startKiln(settings, { parallel: 1, home, model: `${model.name}=${model.path}` });
    out.kiln = await runSession(settings, { start: kiln }, systemWords, log, `kiln ${model.name}`);
    if (llamaCpp) {
      const peer = () => startLlamaServer(settings, llamaCpp, { parallel: 1, modelPath: model.path, extraArgs: ["--slot-save-path", `${home}/`] })
        .then((s) => Object.assign(s, { model: model.name }));
      out["llama-server"] = await runSession(settings, {
        start: peer,
        afterSession: (s) => slotAction(s, "save", "session.bin"),
        beforeSession: (s) => slotAction(s, "restore", "session.bin"),
      }, systemWords, log, `llama-server ${model.name}`);
    }
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
  return out;
}

/** A second model for the phase: BENCH_RESTART_MODEL2, else the Qwen2.5-Coder-0.5B file when present. */
const SECOND_MODEL = process.env.BENCH_RESTART_MODEL2 ?? "/work/models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf";

/** The phase on the benchmark's model, then on the second model when its file exists. */
export async function runRestartPhases(settings, llamaCpp, systemWords, log) {
  const models = [{ name: settings.modelName, path: settings.modelPath }];
  if (existsSync(SECOND_MODEL)) models.push({ name: basename(SECOND_MODEL, ".gguf").replace(/-instruct.*$/, ""), path: SECOND_MODEL });
  const out = [];
  for (const model of models) out.push(await runRestartPhase(settings, llamaCpp, model, systemWords, log));
  return out;
}

/** The phase's section of the report. */
export function renderRestartSection(results) {
  if (!results?.length) return [];
  const lines = ["## Restart: a Claude-Code-shaped session across a server restart", "",
    "Each server has one sequence; the system prompt and tools are the same in both sessions, the first question differs.", "",
    "| model | side | prompt tokens | cold first turn TTFT ms | second turn (RAM) ms | first turn after restart ms | cached after restart | after restart ÷ cold |",
    "|---|---|---:|---:|---:|---:|---:|---:|"];
  for (const r of results) {
    for (const side of ["kiln", "llama-server"]) {
      const t = r[side];
      if (!t?.cold) continue;
      lines.push(`| ${r.model} | ${side} | ${t.cold.promptTokens} | ${t.cold.ttftMs.toFixed(0)} | ${t.ram?.ttftMs.toFixed(0) ?? "-"} | ${t.afterRestart?.ttftMs.toFixed(0) ?? "-"} | ${t.afterRestart?.cachedTokens ?? "-"} | ${t.afterRestartOverCold === undefined ? "-" : `${(100 * t.afterRestartOverCold).toFixed(1)}%`} |`);
    }
  }
  lines.push("", "llama-server's row restores slot 0 with its slot save/restore API (saved after the session, restored before the new one); kiln needs no call.", "");
  return lines;
}
