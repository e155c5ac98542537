/**
 * The benchmark's phases. Sides are measured alternately inside each phase (direct, kiln, llama-server, repeat), so a
 * burst of load from other processes hits all of them alike and the ratios stay meaningful.
 */
import { runAgentTrace, runInterleavedTraces } from "./agent-trace.js";
import { measureGeneration, measurePromptRate, renderChatMl } from "./direct.js";
import { agentSystemPrompt, fitToTokens, generationPrompt } from "./prompts.js";
import { isOverBudget } from "./config.js";
import { median } from "./stats.js";
import { measureHttpGeneration, measureHttpPrompt, runSweepLevel } from "./workloads.js";

const SYSTEM = "You are a helpful assistant.";

/** Lets the previous side's thread-pool workers stop polling before the next side is timed. */
const settle = () => new Promise((resolve) => setTimeout(resolve, 500));

/** User text whose rendered chat prompt is about `target` tokens. */
export function sizedUserText(direct, seed, target) {
  const overhead = direct.model.tokenize(renderChatMl([{ role: "system", content: SYSTEM }, { role: "user", content: "" }]), true).length;
  return fitToTokens(seed, target - overhead, (text) => direct.model.tokenize(text).length);
}

/** Words of system-prompt prose that make the agent system prompt about `target` tokens. */
export function fitSystemWords(direct, target) {
  let words = 600;
  for (let i = 0; i < 6; i++) {
    const n = direct.model.tokenize(agentSystemPrompt(words)).length;
    if (Math.abs(n - target) < 20) break;
    words = Math.max(10, Math.round(words + (target - n) * 0.7));
  }
  return words;
}

/** Single stream on every side: prompt processing (~512 tokens) and generation. */
export async function runSingleStream(settings, direct, servers, log) {
  const sides = [{ side: "node-llama-cpp direct", cpuVariant: direct.cpuVariant }, ...servers.map((s) => ({ side: s.label, cpuVariant: s.cpuVariant }))];
  const pp = sides.map(() => []);
  const gen = sides.map(() => []);
  const genPrompt = (tag) => direct.model.tokenize(renderChatMl([{ role: "system", content: SYSTEM }, { role: "user", content: generationPrompt(tag) }]), true);
  for (let rep = 0; rep < settings.singleStreamRepeats; rep++) {
    if (rep > 0 && isOverBudget(settings)) break;
    const text = (i) => `[run ${rep}-${i}] ${sizedUserText(direct, 10 * rep + i + 1, settings.promptTokens - 8)}`;
    const directTokens = direct.model.tokenize(renderChatMl([{ role: "system", content: SYSTEM }, { role: "user", content: text(0) }]), true);
    pp[0].push(...(await measurePromptRate(direct, { ...settings, singleStreamRepeats: 1 }, directTokens)));
    for (const [i, server] of servers.entries()) pp[i + 1].push((await measureHttpPrompt(server, settings, text(i + 1))).tokensPerSecond);
    // One stream on a context of the servers' shape (settings.parallel sequences): same context and parallel settings.
    const g = await measureGeneration(direct, settings, { sequences: 1, contextSequences: settings.parallel, promptTokensFor: () => genPrompt(`g${rep}`), maxTokens: settings.generateTokens });
    gen[0].push(g.aggregateTokensPerSecond);
    for (const [i, server] of servers.entries()) gen[i + 1].push((await measureHttpGeneration(server, settings, `g${rep}`)).tokensPerSecond);
    log(`single stream ${rep + 1}/${settings.singleStreamRepeats}: pp ${pp.map((p) => p.at(-1)?.toFixed(0)).join(" / ")}, gen ${gen.map((p) => p.at(-1)?.toFixed(1)).join(" / ")}`);
  }
  return sides.map((s, i) => ({ ...s, promptTokensPerSecond: median(pp[i]), generationTokensPerSecond: median(gen[i]),
    promptSamples: pp[i], generationSamples: gen[i] }));
}

/** The concurrency sweep on both servers, plus node-llama-cpp in-process with as many sequences (reference). */
export async function runSweep(settings, direct, servers, log) {
  const levels = [];
  const prompt = (tag) => direct.model.tokenize(renderChatMl([{ role: "system", content: SYSTEM }, { role: "user", content: generationPrompt(tag) }]), true);
  for (const clients of settings.sweepClients) {
    if (isOverBudget(settings)) {
      log(`budget spent: sweep stops before ${clients} clients`);
      break;
    }
    const level = { clients };
    // The first side alternates by level, and each starts after a pause (a server that has just finished keeps its
    // thread pool's workers polling for ~0.1 s): a side's place in the order moved its figures in a three-sided
    // comparison (bench/results/2026-11-28-vm-single-stream-host.md), so neither side keeps one place.
    const order = levels.length % 2 === 0 ? servers : [...servers].reverse();
    for (const server of order) {
      await settle();
      level[server.label] = await runSweepLevel(server, settings, clients, `s${clients}`);
    }
    const d = await measureGeneration(direct, settings, { sequences: clients, promptTokensFor: (i) => prompt(`s${clients}-c${i}`), maxTokens: settings.sweepTokens });
    level.direct = { aggregateTokensPerSecond: d.aggregateTokensPerSecond };
    log(`sweep ${clients}: ${servers.map((s) => `${s.label} ${level[s.label].aggregateTokensPerSecond.toFixed(1)}`).join(", ")}, direct ${d.aggregateTokensPerSecond.toFixed(1)} tok/s`);
    levels.push(level);
  }
  return levels;
}

/** One agent trace per target, sequentially. */
export async function runAgentTraces(settings, targets, systemWords, log) {
  const out = {};
  for (const target of targets) {
    if (isOverBudget(settings)) break;
    out[target.label] = await runAgentTrace(target, settings, systemWords);
    log(`agent trace ${target.label}: TTFT ${out[target.label].map((t) => t.ttftMs.toFixed(0)).join(" ")} ms`);
  }
  return out;
}

/** Two conversations interleaved on each target (started with fewer sequences than conversations). */
export async function runInterleaved(settings, targets, systemWords, log) {
  const out = {};
  for (const target of targets) {
    if (isOverBudget(settings)) break;
    out[target.label] = await runInterleavedTraces(target, settings, systemWords);
    log(`interleaved ${target.label}: TTFT ${out[target.label].map((t) => t.ttftMs.toFixed(0)).join(" ")} ms`);
  }
  return out;
}
