/**
 * `npm run bench:embeddings`: /v1/embeddings on kiln and on llama-server (`--embeddings --pooling last`, the pooling
 * node-llama-cpp gives chat models) for each model of BENCH_EMBED_MODELS (default: the three chat models of the
 * catalog), one after the other on the same threads:
 * - agreement: the cosine between kiln's and llama-server's vector of each text (1 = the same vector);
 * - retrieval: for each triplet (text, a paraphrase, an unrelated text) whether the paraphrase is the closer one;
 * - speed: a batch of 32 texts in one request, alternately on each server, the median of BENCH_REPEATS rounds.
 * Writes bench/results/<date>-<host>-embeddings.{json,md} (bench/.work/ with BENCH_QUICK=1).
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { readSettings } from "./lib/config.js";
import { ensureLlamaCpp } from "./lib/llama-cpp-build.js";
import { describeMachine } from "./lib/machine.js";
import { startKiln, startLlamaServer } from "./lib/servers.js";
import { writeResults } from "./lib/write-results.js";

const log = (line) => console.error(`[bench ${new Date().toISOString().slice(11, 19)}] ${line}`);
const dir = fileURLToPath(new URL(process.env.BENCH_QUICK === "1" ? "./.work/" : "./results/", import.meta.url));

/** (text, paraphrase, unrelated text): a retrieval model puts the paraphrase closer. */
const TRIPLETS = JSON.parse(readFileSync(new URL("./lib/embedding-triplets.json", import.meta.url), "utf8"));

async function embed(server, model, input) {
  const response = await fetch(`${server.baseUrl}/v1/embeddings`, {
    method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model, input, encoding_format: "float" }),
  });
  if (!response.ok) throw new Error(`${server.name}: ${response.status} ${await response.text()}`);
  const body = await response.json();
  return { vectors: body.data.sort((a, b) => a.index - b.index).map((item) => item.embedding), tokens: body.usage?.prompt_tokens };
}

const cosine = (a, b) => {
  const dot = (x, y) => x.reduce((sum, v, i) => sum + v * y[i], 0);
  return dot(a, b) / Math.sqrt(dot(a, a) * dot(b, b));
};
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const round = (value, digits = 3) => Math.round(value * 10 ** digits) / 10 ** digits;

/** Retrieval accuracy and margin of one server's vectors of the flattened triplets. */
function retrieval(vectors) {
  const margins = TRIPLETS.map((_, t) => cosine(vectors[3 * t], vectors[3 * t + 1]) - cosine(vectors[3 * t], vectors[3 * t + 2]));
  return { correct: margins.filter((m) => m > 0).length, of: TRIPLETS.length, meanMargin: round(margins.reduce((s, m) => s + m, 0) / margins.length) };
}

async function measureModel(settings, llamaCpp, name) {
  const modelSettings = { ...settings, modelName: name, modelPath: join(settings.kilnHome, "models", `${name}.gguf`), ctxPerSequence: 2048 };
  const kiln = await startKiln(modelSettings, { parallel: 1 });
  const llama = await startLlamaServer(modelSettings, llamaCpp, { parallel: 1, extraArgs: ["--embeddings", "--pooling", "last"] });
  try {
    const texts = TRIPLETS.flat();
    const [mine, theirs] = [await embed(kiln, kiln.model, texts), await embed(llama, name, texts)];
    const agreement = mine.vectors.map((vector, i) => cosine(vector, theirs.vectors[i]));
    const batch = [...texts, ...texts.slice(0, 32 - texts.length)];
    const times = { kiln: [], "llama-server": [] };
    for (let round = 0; round < settings.singleStreamRepeats; round++) {
      const order = round % 2 === 0 ? [[kiln, "kiln", kiln.model], [llama, "llama-server", name]] : [[llama, "llama-server", name], [kiln, "kiln", kiln.model]];
      for (const [server, label, model] of order) {
        const started = performance.now();
        await embed(server, model, batch);
        times[label].push(performance.now() - started);
      }
    }
    const result = {
      model: name, dimensions: mine.vectors[0].length, cpuVariants: { kiln: kiln.cpuVariant, "llama-server": llama.cpuVariant },
      agreement: { min: round(Math.min(...agreement), 5), mean: round(agreement.reduce((s, c) => s + c, 0) / agreement.length, 5) },
      retrieval: { kiln: retrieval(mine.vectors), "llama-server": retrieval(theirs.vectors) },
      batch32Ms: { kiln: Math.round(median(times.kiln)), "llama-server": Math.round(median(times["llama-server"])) },
      batch32RoundsMs: { kiln: times.kiln.map(Math.round), "llama-server": times["llama-server"].map(Math.round) },
    };
    log(JSON.stringify(result));
    return result;
  } finally {
    await Promise.all([kiln.stop(), llama.stop()]);
  }
}

function renderReport(result) {
  const lines = [`# Embeddings, ${result.date.slice(0, 10)}`, "", `${result.machine.cpu?.model ?? ""} (${result.machine.logicalCpus} vCPUs) · threads ${result.settings.threads} · load at end ${result.loadAverageAtEnd.join(" ")} · llama.cpp ${result.llamaCppCommit.slice(0, 10)}`, "",
    "| model | dims | cosine kiln vs llama-server (min / mean) | paraphrase closer (kiln / llama-server) | mean margin | batch of 32, ms (kiln / llama-server) |",
    "| --- | --- | --- | --- | --- | --- |"];
  for (const m of result.models) {
    lines.push(`| ${m.model} | ${m.dimensions} | ${m.agreement.min} / ${m.agreement.mean} | ${m.retrieval.kiln.correct}/${m.retrieval.kiln.of} / ${m.retrieval["llama-server"].correct}/${m.retrieval["llama-server"].of} | ${m.retrieval.kiln.meanMargin} | ${m.batch32Ms.kiln} / ${m.batch32Ms["llama-server"]} |`);
  }
  return `${lines.join("\n")}\n`;
}

async function main() {
  const settings = readSettings();
  const models = (process.env.BENCH_EMBED_MODELS ?? "smollm2-135m,qwen2.5-coder-0.5b,qwen2.5-coder-1.5b").split(",");
  const llamaCpp = ensureLlamaCpp({ modelPath: join(settings.kilnHome, "models", `${models[0]}.gguf`), threads: settings.threads, log });
  const result = { date: new Date().toISOString(), settings, machine: describeMachine(), llamaCppCommit: llamaCpp.commit, models: [] };
  for (const name of models) result.models.push(await measureModel(settings, llamaCpp, name));
  writeResults(dir, "embeddings", result, renderReport, log);
}

main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
