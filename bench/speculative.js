/**
 * `npm run bench:speculative`: Qwen2.5-Coder-1.5B generating code at temperature 0, alone and drafted by
 * Qwen2.5-Coder-0.5B (`--draft-model`), on kiln and, as a reference, on llama-server without and with `-md`. The four
 * servers run side by side with one slot each; every prompt goes to each of them in turn, the order rotated each
 * round, so the machine's changing load falls on all sides alike. Reports each request's generation rate (tokens
 * after the first ÷ the time after the first), the drafted and accepted tokens, and whether kiln's drafted output is
 * byte-identical to its undrafted one.
 *
 * Env: BENCH_SPEC_ROUNDS (2), BENCH_SPEC_TOKENS (200), BENCH_SPEC_PROMPTS (how many of the prompts, 4),
 * BENCH_SPEC_TIMEOUT (seconds per request, 600: one that runs out is recorded as such), BENCH_DRAFT_MAX (kiln's
 * --draft-max, default kiln's own), BENCH_SPEC_LLAMA=0 (kiln only), BENCH_SPEC_NAME (a suffix for the result
 * files), BENCH_THREADS. Writes bench/results/<date>-speculative[-<name>].{json,md}.
 */
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { readSettings } from "./lib/config.js";
import { describeMachine } from "./lib/machine.js";
import { startKiln, startLlamaServer } from "./lib/servers.js";
import { generationRate, streamChat } from "./lib/sse-client.js";
import { median, round } from "./lib/stats.js";

const RESULTS_DIR = fileURLToPath(new URL("./results/", import.meta.url));
const log = (line) => console.error(`[bench:speculative ${new Date().toISOString().slice(11, 19)}] ${line}`);
const env = process.env;
const models = join(homedir(), ".kiln", "models");
const target = join(models, "qwen2.5-coder-1.5b.gguf");
const draft = join(models, "qwen2.5-coder-0.5b.gguf");
const settings = readSettings({ BENCH_CTX: "4096", ...env, BENCH_MODEL_PATH: target, BENCH_MODEL: "qwen2.5-coder-1.5b" });
const rounds = Number(env.BENCH_SPEC_ROUNDS ?? 2);
const maxTokens = Number(env.BENCH_SPEC_TOKENS ?? 200);
const timeoutMs = 1000 * Number(env.BENCH_SPEC_TIMEOUT ?? 600);
const LLAMA_SERVER = join(homedir(), ".cache", "kiln-bench", "llama.cpp-dl", "build", "bin", "llama-server");

const PROMPTS = [
  "Write a Python function that parses a CSV file into a list of dictionaries, with type hints and a docstring.",
  "Write a TypeScript class implementing an LRU cache with get, set and delete, with comments.",
  "Write a Python script that walks a directory tree and prints the ten largest files with their sizes.",
  "Write a JavaScript function that debounces another function, and a short usage example.",
].slice(0, Number(env.BENCH_SPEC_PROMPTS ?? 4));

async function main() {
  const machine = describeMachine();
  const draftArgs = ["--draft-model", draft, ...(env.BENCH_DRAFT_MAX ? ["--draft-max", env.BENCH_DRAFT_MAX] : [])];
  const starts = [
    ["kiln", () => startKiln(settings, { parallel: 1 })],
    ["kiln --draft-model", () => startKiln(settings, { parallel: 1, extraArgs: draftArgs })],
    ...(existsSync(LLAMA_SERVER) && env.BENCH_SPEC_LLAMA !== "0" ? [
      ["llama-server", () => startLlamaServer(settings, { server: LLAMA_SERVER }, { parallel: 1 })],
      ["llama-server -md", () => startLlamaServer(settings, { server: LLAMA_SERVER }, { parallel: 1, extraArgs: ["-md", draft] })],
    ] : []),
  ];
  const sides = [];
  try {
    for (const [name, start] of starts) {
      log(`starting ${name}`);
      sides.push({ name, server: await start() });
    }
    const runs = [];
    for (let r = 0; r < rounds; r++) {
      for (const [p, prompt] of PROMPTS.entries()) {
        // Rotated per request, so no side always runs first (or right after the same other side).
        const order = sides.map((_, i) => sides[(i + r + p) % sides.length]);
        for (const side of order) {
          const timing = await streamChat(side.server.baseUrl, {
            model: side.server.model, messages: [{ role: "user", content: prompt }], maxTokens,
            extra: side.server.extra, timeoutMs,
          }).catch((error) => ({ error: String(error?.message ?? error) }));
          if (timing.error) {
            log(`round ${r + 1} prompt ${p + 1} ${side.name}: ${timing.error}`);
            runs.push({ round: r + 1, prompt: p + 1, side: side.name, error: timing.error });
            continue;
          }
          const run = { round: r + 1, prompt: p + 1, side: side.name, tokens: timing.completionTokens, tokPerS: round(generationRate(timing), 2), ...drafts(timing), text: timing.text };
          log(`round ${run.round} prompt ${run.prompt} ${side.name}: ${run.tokens} tokens, ${run.tokPerS} tok/s${run.drafted !== undefined ? `, ${run.accepted}/${run.drafted} drafts accepted` : ""}`);
          runs.push(run);
        }
      }
    }
    const result = { date: new Date().toISOString(), machine, settings: { target, draft, threads: settings.threads, ctx: settings.ctxPerSequence, maxTokens, rounds, draftMax: env.BENCH_DRAFT_MAX ?? "kiln's default" }, runs };
    mkdirSync(RESULTS_DIR, { recursive: true });
    const file = join(RESULTS_DIR, `${result.date.slice(0, 10)}-speculative${env.BENCH_SPEC_NAME ? `-${env.BENCH_SPEC_NAME}` : ""}`);
    writeFileSync(`${file}.json`, `${JSON.stringify(result, null, 2)}\n`);
    writeFileSync(`${file}.md`, render(result));
    log(`wrote ${file}.md`);
  } finally {
    for (const side of sides) await side.server.stop();
  }
}

/** Drafted and accepted tokens: kiln's usage.completion_tokens_details, llama-server's timings. */
function drafts(timing) {
  const details = timing.usage?.completion_tokens_details;
  if (details?.accepted_prediction_tokens !== undefined) {
    return { drafted: details.accepted_prediction_tokens + details.rejected_prediction_tokens, accepted: details.accepted_prediction_tokens };
  }
  const t = timing.serverTimings;
  return t?.draft_n !== undefined ? { drafted: t.draft_n, accepted: t.draft_n_accepted } : {};
}

function render({ date, machine, settings: s, runs }) {
  const names = [...new Set(runs.map((run) => run.side))];
  const rate = (name) => runs.filter((run) => run.side === name && !run.error).map((run) => run.tokPerS);
  const acceptance = (name) => {
    const mine = runs.filter((run) => run.side === name && run.drafted);
    const drafted = mine.reduce((sum, run) => sum + run.drafted, 0);
    return drafted ? `${round((100 * mine.reduce((sum, run) => sum + run.accepted, 0)) / drafted, 1)}%` : "–";
  };
  const pairs = runs.filter((run) => run.side === "kiln --draft-model" && !run.error).map((run) => {
    const plain = runs.find((other) => other.side === "kiln" && !other.error && other.round === run.round && other.prompt === run.prompt);
    return { run, plain, ratio: plain ? round(run.tokPerS / plain.tokPerS, 2) : undefined, identical: plain?.text === run.text };
  });
  const refPairs = runs.filter((run) => run.side === "llama-server -md" && !run.error).flatMap((run) => {
    const plain = runs.find((other) => other.side === "llama-server" && !other.error && other.round === run.round && other.prompt === run.prompt);
    return plain ? [round(run.tokPerS / plain.tokPerS, 2)] : [];
  });
  return [
    `# Speculative decoding, ${date.slice(0, 10)}`, "",
    `Target ${s.target.split("/").at(-1)}, draft ${s.draft.split("/").at(-1)}; ${s.maxTokens} tokens at temperature 0; one slot of ${s.ctx} tokens per server; ${s.threads} threads; draft max: ${s.draftMax}; ${s.rounds} rounds, the servers (${names.join(", ")}) in rotated order for every request.`,
    `Machine: ${machine.cpu.model} (family ${machine.cpu.family} model ${machine.cpu.modelNumber}), ${machine.availableParallelism} cores, load average at start ${machine.loadAverageAtStart.join(" / ")}; node-llama-cpp ${machine.nodeLlamaCpp} (llama.cpp ${machine.nodeLlamaCppLlamaRelease}).`, "",
    "## Every request", "",
    "| round | prompt | side | tokens | tok/s | drafts accepted |", "| --- | --- | --- | --- | --- | --- |",
    ...runs.map((run) => run.error ? `| ${run.round} | ${run.prompt} | ${run.side} | – | ${run.error} | – |`
      : `| ${run.round} | ${run.prompt} | ${run.side} | ${run.tokens} | ${run.tokPerS} | ${run.drafted !== undefined ? `${run.accepted}/${run.drafted}` : "–"} |`), "",
    "## Per side", "",
    "| side | median tok/s | all | acceptance |", "| --- | --- | --- | --- |",
    ...names.map((name) => `| ${name} | ${round(median(rate(name)), 2)} | ${rate(name).join(", ")} | ${acceptance(name)} |`), "",
    "## kiln drafted ÷ undrafted, same round and prompt", "",
    `Ratios: ${pairs.map((pair) => pair.ratio).join(", ")} (median ${round(median(pairs.map((pair) => pair.ratio)), 2)}).`,
    `Output byte-identical to the undrafted run: ${pairs.filter((pair) => pair.identical).length} of ${pairs.length}.`,
    ...(refPairs.length ? [`llama-server -md ÷ llama-server: ${refPairs.join(", ")} (median ${round(median(refPairs), 2)}).`] : []),
    "",
  ].join("\n");
}

await main();
