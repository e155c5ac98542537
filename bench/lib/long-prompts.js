/**
 * Long agent-shaped prompts on every side, quiet and with one core kept busy by another process; a running stream's
 * inter-token latency while another client's long prompt is evaluated; and the time from a client's disconnect
 * mid-prompt to the server's CPU going idle. The servers run with 2 sequences of `longCtx` tokens each.
 */
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { measurePromptRate, renderChatMl } from "./direct.js";
import { agentSystemPrompt } from "./prompts.js";
import { readSseData, streamChat } from "./sse-client.js";
import { median, percentile } from "./stats.js";

const USER = "List the tools you have, one line each.";
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** An agent-shaped conversation (long system prompt with the tool list) of about `target` tokens, unique by `tag`. */
export function agentMessages(direct, target, tag) {
  const count = (words) => direct.model.tokenize(renderChatMl([{ role: "system", content: `[${tag}] ${agentSystemPrompt(words)}` }, { role: "user", content: USER }]), true).length;
  let words = Math.round(target * 0.7);
  for (let i = 0; i < 6; i++) {
    const n = count(words);
    if (Math.abs(n - target) <= 0.01 * target) break;
    words = Math.max(10, Math.round(words + (target - n) * 0.75));
  }
  return [{ role: "system", content: `[${tag}] ${agentSystemPrompt(words)}` }, { role: "user", content: USER }];
}

/** Starts a process that keeps one core busy (a plain CPU loop); returns its stopper. */
export function startBusyCore() {
  const child = spawn(process.execPath, ["-e", "for(;;){}"], { stdio: "ignore" });
  const stop = () => child.kill("SIGKILL");
  process.once("exit", stop);
  return stop;
}

/** CPU time (ms) a process has used so far, from /proc/<pid>/stat (clock ticks of 10 ms). */
function cpuMs(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/**
 * Prompt tokens per second on each side for one conversation (time to the first token on the servers): the median of
 * `repeats` rounds, each with the sides in a rotated order so none is always measured first or last.
 */
async function promptRates(settings, direct, servers, messages, tag) {
  const sides = [{ label: "node-llama-cpp direct" }, ...servers];
  const samples = Object.fromEntries(sides.map((s) => [s.label, []]));
  const tokens = (name) => direct.model.tokenize(renderChatMl(messages(name)), true);
  for (let round = 0; round < settings.longRepeats; round++) {
    for (const side of [...sides.slice(round % sides.length), ...sides.slice(0, round % sides.length)]) {
      const name = `${tag}-r${round}-${side.label}`;
      if (side.baseUrl === undefined) {
        samples[side.label].push((await measurePromptRate(direct, { ...settings, singleStreamRepeats: 1 }, tokens(name)))[0]);
        continue;
      }
      const t = await streamChat(side.baseUrl, { model: side.model, messages: messages(name), maxTokens: 1, extra: side.extra,
        timeoutMs: settings.longTimeoutMs });
      samples[side.label].push(((t.promptTokens - (t.cachedTokens ?? 0)) * 1000) / t.ttftMs);
    }
  }
  const tokensPerSecond = Object.fromEntries(Object.entries(samples).map(([side, rates]) => [side, median(rates)]));
  return { promptTokens: tokens(`${tag}-direct`).length, tokensPerSecond, samples };
}

/**
 * Opens a streaming request (`input`: chat messages, or a raw completion prompt string) and calls onChunk(time) for
 * every content chunk; resolves when the stream ends or is aborted.
 */
async function openStream(server, input, maxTokens, signal, onChunk) {
  const raw = typeof input === "string";
  try {
    const res = await fetch(`${server.baseUrl}/v1/${raw ? "completions" : "chat/completions"}`, { method: "POST", signal,
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: server.model, ...(raw ? { prompt: input } : { messages: input }), max_tokens: maxTokens, temperature: 0,
        stream: true, ...server.extra }) });
    for await (const data of readSseData(res.body)) {
      if (data === "[DONE]") break;
      const choice = JSON.parse(data).choices?.[0];
      if (choice?.text || choice?.delta?.content || choice?.delta?.reasoning_content) onChunk(performance.now());
    }
  } catch (error) {
    if (!signal.aborted) throw error;
  }
}

/**
 * A client streams counting completions of `itlStreamTokens` tokens back to back, each a new request, so the
 * stream's own context stays short and its steps comparable throughout. The first runs alone: its gaps are the
 * undisturbed ITL, at the same token positions as the later ones. Then another client sends the long conversation;
 * the gaps within the streams until the long request's first token are the disturbed ITL (the wait for each new
 * stream's first token is reported apart, as TTFT).
 */
async function itlDuringPrefill(settings, server, streamPrompt, longMessages) {
  const streams = [];
  const streamOnce = async (signal, onToken = () => {}) => {
    const stream = { sent: performance.now(), times: [] };
    streams.push(stream);
    await openStream(server, streamPrompt, settings.itlStreamTokens, signal, (t) => { stream.times.push(t); onToken(stream.times.length); });
    return stream;
  };
  const gapsOf = (times, from = 0, to = Infinity) =>
    times.slice(1).map((t, i) => [times[i], t]).filter(([a, b]) => b > from && a < to).map(([a, b]) => b - a);
  const alone = await streamOnce(new AbortController().signal);
  streams.length = 0;
  const undisturbed = gapsOf(alone.times.slice(2));
  const controller = new AbortController();
  let done = false;
  let ready;
  const running = new Promise((resolve) => { ready = resolve; });
  const chain = (async () => {
    await streamOnce(controller.signal, (n) => { if (n === 3) ready(); });
    while (!done) await streamOnce(controller.signal);
  })();
  await Promise.race([running, chain]);
  const start = performance.now();
  const long = await streamChat(server.baseUrl, { model: server.model, messages: longMessages, maxTokens: 1, extra: server.extra,
    timeoutMs: settings.longTimeoutMs });
  const end = start + long.ttftMs;
  // A server that evaluates the whole prompt in one step stalls the stream until then: its next token closes that gap.
  for (const deadline = performance.now() + 60_000; !(streams.at(-1)?.times.at(-1) > end) && performance.now() < deadline;) await sleep(50);
  done = true;
  controller.abort();
  await chain;
  const during = streams.filter((s) => s.times.length && s.times[0] < end);
  const disturbed = during.flatMap((s) => gapsOf(s.times, start, end));
  const ttfts = during.slice(1).map((s) => s.times[0] - s.sent);
  return {
    longPromptTokens: long.promptTokens, longTtftMs: long.ttftMs, undisturbedTokens: undisturbed.length, disturbedTokens: disturbed.length,
    undisturbedItlP50Ms: median(undisturbed), undisturbedItlP95Ms: percentile(undisturbed, 95),
    disturbedItlP50Ms: median(disturbed), disturbedItlP95Ms: percentile(disturbed, 95),
    undisturbedTtftMs: alone.times[0] - alone.sent, streamsDuring: during.length, streamTtftP50Ms: median(ttfts), streamTtftMaxMs: ttfts.length ? Math.max(...ttfts) : Number.NaN,
  };
}

/** Sends the long conversation, disconnects after `afterMs` (mid-prompt), and times until the server's CPU is idle. */
async function disconnectToIdle(server, messages, afterMs) {
  const controller = new AbortController();
  const request = openStream(server, messages, 1, controller.signal, () => {});
  await sleep(afterMs);
  const busyBefore = cpuMs(server.pid);
  await sleep(200);
  const busyCores = (cpuMs(server.pid) - busyBefore) / 200;
  const disconnected = performance.now();
  controller.abort();
  await request;
  // Idle: a 100 ms window in which the server used at most one 10 ms clock tick.
  for (let last = cpuMs(server.pid), windowStart = performance.now(); performance.now() - disconnected < 30_000;) {
    await sleep(100);
    const now = cpuMs(server.pid);
    if (now - last <= 10) return { busyCoresBeforeDisconnect: busyCores, disconnectToIdleMs: windowStart - disconnected };
    last = now;
    windowStart = performance.now();
  }
  return { busyCoresBeforeDisconnect: busyCores, disconnectToIdleMs: Number.NaN };
}

/** The whole phase; `servers` were started with 2 sequences of settings.ctxPerSequence tokens. */
export async function runLongPrompts(settings, direct, servers, log) {
  const out = { lengths: settings.longPromptLengths, quiet: [], contended: [], itl: {}, disconnect: {} };
  for (const [mode, busy] of [["quiet", false], ["contended", true]].filter(([mode]) => settings.longModes.includes(mode))) {
    const stopBusy = busy ? startBusyCore() : undefined;
    try {
      for (const length of settings.longPromptLengths) {
        const rates = await promptRates(settings, direct, servers, (tag) => agentMessages(direct, length, tag), `${mode}-${length}`);
        out[mode].push({ length, ...rates });
        log(`long prompt ${mode} ${rates.promptTokens} tokens: ${Object.entries(rates.tokensPerSecond).map(([s, v]) => `${s} ${v.toFixed(0)}`).join(", ")} tok/s`);
      }
    } finally {
      stopBusy?.();
    }
  }
  if (!settings.itlPromptTokens) return out;
  // A raw completion that goes on counting, so the stream outlasts the long prompt.
  const counting = `${Array.from({ length: 30 }, (_, i) => i + 1).join(", ")},`;
  for (const server of servers) {
    if (settings.itlStream) {
      out.itl[server.label] = await itlDuringPrefill(settings, server, counting, agentMessages(direct, settings.itlPromptTokens, `itl-${server.label}`));
      log(`ITL during prefill ${server.label}: ${JSON.stringify(out.itl[server.label])}`);
    }
    out.disconnect[server.label] = await disconnectToIdle(server, agentMessages(direct, settings.itlPromptTokens, `dc-${server.label}`), settings.disconnectAfterMs);
    log(`disconnect to idle ${server.label}: ${JSON.stringify(out.disconnect[server.label])}`);
  }
  return out;
}
