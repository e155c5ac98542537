/**
 * The HTTP workloads, identical for kiln and llama-server: single-stream prompt processing and generation, and the
 * concurrency sweep. Each request has a unique prompt, so no side gains from a cache it should not have.
 */
import { generationPrompt } from "./prompts.js";
import { generationRate, interTokenGaps, streamChat } from "./sse-client.js";
import { median, percentile } from "./stats.js";

const SYSTEM = "You are a helpful assistant.";

/** @typedef {{ baseUrl: string, model: string, extra: object }} Target */

function chat(target, settings, messages, maxTokens) {
  return streamChat(target.baseUrl, {
    model: target.model, messages, maxTokens, extra: target.extra, timeoutMs: settings.requestTimeoutMs,
  });
}

/** Prompt processing over HTTP: a ~512-token prompt, one output token; prompt tokens ÷ time to first token. */
export async function measureHttpPrompt(target, settings, promptText) {
  const t = await chat(target, settings, [{ role: "system", content: SYSTEM }, { role: "user", content: promptText }], 1);
  return {
    promptTokens: t.promptTokens,
    cachedTokens: t.cachedTokens,
    ttftMs: t.ttftMs,
    tokensPerSecond: ((t.promptTokens ?? Number.NaN) - (t.cachedTokens ?? 0)) * 1000 / t.ttftMs,
    serverReportedTokensPerSecond: t.serverTimings?.prompt_per_second,
  };
}

/** Generation over HTTP: up to `generateTokens` tokens of a story; rate after the first token. */
export async function measureHttpGeneration(target, settings, tag) {
  const messages = [{ role: "system", content: SYSTEM }, { role: "user", content: generationPrompt(tag) }];
  const t = await chat(target, settings, messages, settings.generateTokens);
  return {
    completionTokens: t.completionTokens,
    tokensPerSecond: generationRate(t),
    serverReportedTokensPerSecond: t.serverTimings?.predicted_per_second,
  };
}

/**
 * `clients` concurrent clients, each sending `sweepRounds` requests back to back. Returns time to first token and
 * inter-token latency percentiles and the aggregate output rate over the level's wall time.
 */
export async function runSweepLevel(target, settings, clients, tagPrefix) {
  const timings = [];
  const t0 = performance.now();
  await Promise.all(Array.from({ length: clients }, async (_, c) => {
    for (let r = 0; r < settings.sweepRounds; r++) {
      const tag = `${tagPrefix}-c${c}-r${r}`;
      const messages = [{ role: "system", content: SYSTEM }, { role: "user", content: generationPrompt(tag) }];
      timings.push(await chat(target, settings, messages, settings.sweepTokens));
    }
  }));
  const seconds = (performance.now() - t0) / 1000;
  const ttft = timings.map((t) => t.ttftMs);
  const gaps = timings.flatMap(interTokenGaps);
  const tokens = timings.reduce((a, t) => a + t.completionTokens, 0);
  return {
    clients,
    requests: timings.length,
    outputTokens: tokens,
    ttftP50Ms: percentile(ttft, 50),
    ttftP95Ms: percentile(ttft, 95),
    itlP50Ms: percentile(gaps, 50),
    itlP95Ms: percentile(gaps, 95),
    aggregateTokensPerSecond: tokens / seconds,
    /** Requests sent twice because the server closed their kept-alive connection (see streamChat). */
    retriedRequests: timings.filter((t) => t.retried).length,
    perStreamTokensPerSecond: median(timings.map(generationRate)),
  };
}
