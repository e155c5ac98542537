/**
 * `node bench/investigate/load-stalls.js`: how long a stream of one model stops while a second model loads on demand.
 * Each round starts `kiln serve` with the default model declared (the coder model in the store, unloaded 1 s after
 * its last request), streams 400 tokens of the default model alone, then again while the coder model is asked for
 * (its load and its first 16 tokens), twice in the same server (a first load, and a load after the idle unload).
 * Reports per load: the stream's largest, 2nd-largest and median gap between tokens from the coder request to the
 * coder model's first token, and the gaps of the stream alone.
 *
 * Builds alternate by round: KILN_BINS="/path/a/bin/kiln.js,/path/b/bin/kiln.js" (default: this checkout's).
 * ROUNDS (default 4). BUSY=1 keeps one core busy (`yes`) throughout. Prints one JSON line per load, then a summary.
 */
import { spawn } from "node:child_process";
import { cpus } from "node:os";
import { fileURLToPath } from "node:url";

const bins = (process.env.KILN_BINS ?? fileURLToPath(new URL("../../bin/kiln.js", import.meta.url))).split(",");
const rounds = Number(process.env.ROUNDS ?? 4);
const CODER = "qwen2.5-coder-0.5b";
const DEFAULT = "smollm2-135m";

function startServe(bin) {
  const child = spawn(process.execPath, [bin, "serve", "--port", "0", "--log-level", "warn", "--model", DEFAULT, "--keep-alive", "1s", "--ctx-size", "4096", "--parallel", "1"], { stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  return new Promise((resolve, reject) => {
    child.stderr.setEncoding("utf8").on("data", (chunk) => {
      stderr += chunk;
      const url = /^Anthropic base URL: (\S+)/m.exec(stderr)?.[1];
      if (url && /^auth: /m.test(stderr)) resolve({ child, url });
    });
    child.once("exit", (code) => reject(new Error(`kiln serve exited (${code}):\n${stderr}`)));
  });
}

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
  const busy = process.env.BUSY === "1" ? spawn("yes", { stdio: ["ignore", "ignore", "ignore"] }) : undefined;
  const results = [];
  try {
    for (let round = 0; round < rounds; round++) {
      for (const bin of round % 2 === 0 ? bins : [...bins].reverse()) {
        const serve = await startServe(bin);
        try {
          await chunkTimes(serve.url, DEFAULT, 32, "hi");
          const alone = summary(gapsWithin(await chunkTimes(serve.url, DEFAULT, 400, story)));
          for (const load of ["first", "again"]) {
            const stream = chunkTimes(serve.url, DEFAULT, 400, story);
            await new Promise((resolve) => setTimeout(resolve, 300));
            const asked = performance.now();
            const coder = await chunkTimes(serve.url, CODER, 16, "Write a Python function that adds two numbers.");
            const times = await stream;
            const firstToken = coder[1] ?? coder[0];
            const row = { bin, round, load, loadAndFirstTokenMs: Math.round(firstToken - asked), alone, duringLoad: summary(gapsWithin(times, asked, firstToken)) };
            results.push(row);
            console.log(JSON.stringify(row));
            while ((await loadedModels(serve.url)).includes(CODER)) await new Promise((resolve) => setTimeout(resolve, 200));
          }
        } finally {
          serve.child.kill("SIGTERM");
          await new Promise((resolve) => serve.child.once("exit", resolve));
        }
      }
    }
  } finally {
    busy?.kill();
  }
  const medianOf = (values) => values.sort((a, b) => a - b)[values.length >> 1];
  const out = { cpu: cpus()[0]?.model, cores: cpus().length, busyCore: Boolean(busy), rounds, builds: {} };
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
