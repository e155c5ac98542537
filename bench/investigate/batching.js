/**
 * Why does node-llama-cpp gain little from several sequences while llama.cpp's batched decode doubles?
 * For N = 1, 2, 4, 8 sequences decoding together in one node-llama-cpp context this records:
 *  - how many sequences each dispatched batch really held (node-llama-cpp's batching, via a recording strategy);
 *  - the time spent inside the native decode versus the wall time (dispatch, sampling and JS overhead);
 * and runs llama-batched-bench (llama.cpp's own batched decode) with the same threads for comparison.
 * Usage: node bench/investigate/batching.js [tokensPerSequence]   (prints JSON lines)
 */
import { spawnSync } from "node:child_process";
import { setImmediate } from "node:timers/promises";
import { setImmediate as setImmediateCallback } from "node:timers";
import { readSettings } from "../lib/config.js";
import { loadDirect, recordingBatching, renderChatMl } from "../lib/direct.js";
import { ensureLlamaCpp } from "../lib/llama-cpp-build.js";
import { generationPrompt } from "../lib/prompts.js";

const tokensPerSequence = Number(process.argv[2] ?? 64);
const levels = (process.env.LEVELS ?? "1,2,4,8").split(",").map(Number);
const settings = readSettings();
/**
 * default: node-llama-cpp as is; yield: consumers wait a turn per token; gather: yield + gatherSchedule;
 * barrier: a step barrier across the generating sequences.
 */
const modes = (process.env.MODES ?? "default,barrier").split(",");

/** Wraps the context's native decode to sum its time and count calls. */
function timeNativeDecode(context) {
  const ctx = context._ctx;
  const stats = { calls: 0, ms: 0 };
  const decodeBatch = async () => {
    const t0 = performance.now();
    try {
      return await ctx.decodeBatch();
    } finally {
      stats.calls++;
      stats.ms += performance.now() - t0;
    }
  };
  // The native object's methods are read-only; a proxy in its place intercepts the one call we time.
  context._ctx = new Proxy(ctx, {
    get: (target, key) => (key === "decodeBatch" ? decodeBatch : typeof target[key] === "function" ? target[key].bind(target) : target[key]),
  });
  return stats;
}

/**
 * A dispatch schedule that waits (a few event-loop turns, at most maxWaitMs) until every sequence still generating
 * has queued its next token, so a decode step holds all of them. Reads node-llama-cpp's internal queue length; an
 * engine would count "sequences waiting for a token" itself.
 */
function gatherSchedule(holder, maxWaitMs) {
  return (dispatch) => {
    const start = performance.now();
    const tick = () => {
      const queued = holder.context?._queuedDecodes.length ?? 0;
      if (queued >= holder.active || performance.now() - start > maxWaitMs) dispatch();
      else setImmediateCallback(tick);
    };
    setImmediateCallback(tick);
  };
}

/**
 * A step barrier across the sequences generating together: each waits after receiving its token until every active
 * one has received its own, then all ask for the next token in the same event-loop turn — so they queue together,
 * node-llama-cpp dispatches one batch holding all of them, and none arrives mid-decode to start a partial batch.
 */
function createStepBarrier(participants) {
  let active = participants;
  let waiting = [];
  const release = () => {
    if (waiting.length < active) return;
    const wake = waiting;
    waiting = [];
    for (const resolve of wake) resolve();
  };
  return {
    arrive: () => new Promise((resolve) => {
      waiting.push(resolve);
      release();
    }),
    leave: () => {
      active--;
      release();
    },
  };
}

async function measureNodeLlamaCpp(direct, sequences, mode) {
  const barrier = createStepBarrier(sequences);
  const dispatched = [];
  const yieldTurn = mode === "yield" || mode === "gather";
  const holder = { context: undefined, active: sequences };
  const batching = recordingBatching(dispatched);
  if (mode === "gather") batching.dispatchSchedule = gatherSchedule(holder, 20);
  const context = await direct.model.createContext({ contextSize: 2048, sequences, threads: settings.threads, batching });
  holder.context = context;
  const seqs = Array.from({ length: sequences }, () => context.getSequence());
  const prompts = seqs.map((_, i) => direct.model.tokenize(renderChatMl([{ role: "user", content: generationPrompt(`b${i}`) }]), true));
  await Promise.all(seqs.map((s, i) => s.evaluateWithoutGeneratingNewTokens(prompts[i].slice(0, -1))));
  dispatched.length = 0;
  const decode = timeNativeDecode(context);
  const t0 = performance.now();
  const counts = await Promise.all(seqs.map(async (s, i) => {
    let n = 0;
    // Ignore end-of-generation so every sequence decodes exactly tokensPerSequence tokens (as batched-bench does).
    for await (const _ of s.evaluate(prompts[i].slice(-1), { temperature: 0 })) {
      if (++n >= tokensPerSequence) {
        holder.active--;
        barrier.leave();
        break;
      }
      if (mode === "barrier") {
        await barrier.arrive();
        continue;
      }
      // With yieldTurn, each consumer waits one event-loop turn before asking for its next token: node-llama-cpp then
      // finds its queue empty after a decode, schedules the next dispatch with setImmediate, and every sequence has
      // queued its next token by then (see the report in bench/README.md).
      if (yieldTurn) await setImmediate();
    }
    return n;
  }));
  const wallMs = performance.now() - t0;
  await context.dispose();
  const histogram = {};
  for (const n of dispatched) histogram[n] = (histogram[n] ?? 0) + 1;
  const total = counts.reduce((a, b) => a + b, 0);
  return {
    side: `node-llama-cpp (${mode})`, sequences, tokens: total, aggregateTokensPerSecond: round((total * 1000) / wallMs),
    decodeCalls: decode.calls, sequencesPerDecode: round(total / decode.calls, 2), nativeDecodeShare: round(decode.ms / wallMs, 2),
    msPerDecode: round(decode.ms / decode.calls, 2), dispatchHistogram: histogram,
  };
}

function round(v, d = 1) {
  return Math.round(v * 10 ** d) / 10 ** d;
}

function runBatchedBench(llamaCpp) {
  const args = ["-m", settings.modelPath, "-c", "16384", "-b", "2048", "-ub", "512", "-npp", "32", "-ntg", String(tokensPerSequence),
    "-npl", levels.join(","), "-t", String(settings.threads), "-tb", String(settings.threads), "--output-format", "jsonl"];
  const res = spawnSync(llamaCpp.batchedBench, args, { encoding: "utf8", timeout: 300_000 });
  const variant = res.stderr.match(/libggml-cpu-([\w.-]+?)\.so/)?.[1];
  return res.stdout.split("\n").filter((l) => l.startsWith("{")).map((l) => {
    const j = JSON.parse(l);
    return { side: "llama-batched-bench", cpuVariant: variant, sequences: j.pl, aggregateTokensPerSecond: round(j.speed_tg), msPerDecode: round((j.t_tg * 1000) / j.tg, 2) };
  });
}

const direct = await loadDirect(settings);
console.log(JSON.stringify({ machineFlags: "see bench/lib/machine.js", nodeLlamaCppVariant: direct.cpuVariant, threads: settings.threads }));
for (const n of levels) {
  for (const mode of n > 1 ? modes : ["default"]) console.log(JSON.stringify(await measureNodeLlamaCpp(direct, n, mode)));
}
await direct.model.dispose();
if (process.env.SKIP_LLAMA !== "1") {
  const llamaCpp = ensureLlamaCpp({ modelPath: settings.modelPath, threads: settings.threads, extraTargets: ["llama-batched-bench"] });
  for (const row of runBatchedBench(llamaCpp)) console.log(JSON.stringify(row));
}
