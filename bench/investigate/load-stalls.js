/**
 * `node bench/investigate/load-stalls.js`: how long a stream of one model stops while a second model loads on demand.
 * Each round starts `kiln serve` with the default model declared (the coder model in the store, unloaded 1 s after
 * its last request), streams 400 tokens of the default model alone, then again while the coder model is asked for
 * (its load and its first 16 tokens), twice in the same server (a first load, and a load after the idle unload).
 * Reports per load: the stream's largest, 2nd-largest and median gap between tokens from the coder request to the
 * coder model's first token, and the gaps of the stream alone.
 *
 * Builds alternate by round: KILN_BINS="/path/a/bin/kiln.js,/path/b/bin/kiln.js" (default: this checkout's).
 * ROUNDS (default 4). BUSY=1 keeps one core busy (a spinning process) throughout. Prints one JSON line per load, then a summary.
 */
import { cpus } from "node:os";
import { fileURLToPath } from "node:url";
import { readSettings } from "../lib/config.js";
import { startBusyCore } from "../lib/long-prompts.js";
import { startKiln } from "../lib/servers.js";

const bins = (process.env.KILN_BINS ?? fileURLToPath(new URL("../../bin/kiln.js", import.meta.url))).split(",");
const rounds = Number(process.env.ROUNDS ?? 4);
const CODER = "qwen2.5-coder-0.5b";
const DEFAULT = "smollm2-135m";
const settings = readSettings({ ...process.env, BENCH_CTX: "4096" });

/** `kiln serve` with the default model declared, in the user's home (its store holds the coder model, unloaded). */
const startServe = (bin) => startKiln(settings, { bin, home: settings.kilnHome, model: DEFAULT, parallel: 1, extraArgs: ["--keep-alive", "1s"] });

/** A streamed chat request; the arrival time (ms) of every chunk. */
async function chunkTimes(url, model, maxTokens, content) {
  const response = await fetch(`${url}/v1/chat/completions`, {
    method: "POST", headers: { "content-type": "application/json" },
    body: JSON.stringify({ model, stream: true, max_tokens: maxTokens, temperature: 0, messages: [{ role: "user", content }] }),
  });
  if (!response.ok) throw new Error(`${model}: HTTP ${response.status} ${await response.text()}`);
  const times = [];
  for await (const _ of response.body) times.push(performance.now());
  return times;
}

/** Gaps between consecutive chunks that end within [from, to] (the first gap, the prompt's evaluation, is left out). */
function gapsWithin(times, from = -Infinity, to = Infinity) {
  const gaps = [];
  for (let i = 2; i < times.length; i++) if (times[i] >= from && times[i] <= to) gaps.push(times[i] - times[i - 1]);
  return gaps.sort((a, b) => b - a);
}

const summary = (gaps) => ({ max: Math.round(gaps[0] ?? 0), second: Math.round(gaps[1] ?? 0), median: Math.round(gaps[gaps.length >> 1] ?? 0), count: gaps.length });
const story = "Tell a long story about a kiln.";

async function loadedModels(url) {
  const body = await (await fetch(`${url}/v1/models`)).json();
  return body.data.filter((m) => m.details?.loaded).map((m) => m.id);
}

async function main() {
  const stopBusy = process.env.BUSY === "1" ? startBusyCore() : undefined;
  const results = [];
  try {
    for (let round = 0; round < rounds; round++) {
      for (const bin of round % 2 === 0 ? bins : [...bins].reverse()) {
        const serve = await startServe(bin);
        try {
          await chunkTimes(serve.baseUrl, DEFAULT, 32, "hi");
          const alone = summary(gapsWithin(await chunkTimes(serve.baseUrl, DEFAULT, 400, story)));
          for (const load of ["first", "again"]) {
            const stream = chunkTimes(serve.baseUrl, DEFAULT, 400, story);
            await new Promise((resolve) => setTimeout(resolve, 300));
            const asked = performance.now();
            const coder = await chunkTimes(serve.baseUrl, CODER, 16, "Write a Python function that adds two numbers.");
            const times = await stream;
            const firstToken = coder[1] ?? coder[0];
            const row = { bin, round, load, loadAndFirstTokenMs: Math.round(firstToken - asked), alone, duringLoad: summary(gapsWithin(times, asked, firstToken)) };
            results.push(row);
            console.log(JSON.stringify(row));
            while ((await loadedModels(serve.baseUrl)).includes(CODER)) await new Promise((resolve) => setTimeout(resolve, 200));
          }
        } finally {
          await serve.stop();
        }
      }
    }
  } finally {
    stopBusy?.();
  }
  const medianOf = (values) => values.sort((a, b) => a - b)[values.length >> 1];
  const out = { cpu: cpus()[0]?.model, cores: cpus().length, busyCore: Boolean(stopBusy), rounds, builds: {} };
  for (const bin of bins) {
    for (const load of ["first", "again"]) {
      const rows = results.filter((r) => r.bin === bin && r.load === load);
      out.builds[`${bin} (${load} load)`] = {
        maxGapDuringLoadMs: rows.map((r) => r.duringLoad.max), secondGapDuringLoadMs: rows.map((r) => r.duringLoad.second),
        medianGapDuringLoadMs: medianOf(rows.map((r) => r.duringLoad.median)), maxGapAloneMs: rows.map((r) => r.alone.max),
        medianGapAloneMs: medianOf(rows.map((r) => r.alone.median)), loadAndFirstTokenMs: rows.map((r) => r.loadAndFirstTokenMs),
      };
    }
  }
  console.log(JSON.stringify(out, null, 2));
}

await main();
