/**
 * `npm run bench:sampler`: the host time of sampling one decode step's sequences, node-llama-cpp's way (an async
 * native call per sequence, each copying the whole vocabulary into candidates) against kiln's step sampler (one call
 * for the step: native/step-sampler.c), on the same logits. A context of N sequences decodes one token each, then
 * both ways sample every sequence ROUNDS times, alternating, at kiln's default sampling (temperature 0.8, top-k 40,
 * top-p 0.95, min-p 0.05) and greedy. On a GPU the decode of a step takes a few milliseconds, so this is the part of
 * the step that grows with the sequences. Env: BENCH_SAMPLER_MODELS (catalog names, "smollm2-135m,qwen2.5-coder-0.5b",
 * or GGUF paths), BENCH_SAMPLER_SEQUENCES ("8,32,64"), BENCH_SAMPLER_ROUNDS (30), BENCH_SAMPLER_GPU=1 (the model on
 * the GPU llama.cpp finds, logits read back from it; the results file ends in -gpu when one was found). Build first
 * (npm run build). Writes bench/results/<date>-<host>-step-sampler[-gpu].{json,md}.
 */
import { writeFileSync } from "node:fs";
import { homedir, hostname } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { getLlama } from "node-llama-cpp";
import { describeMachine } from "./lib/machine.js";
import { loadedLibraries, loadNativeModule, nativeHandles } from "../dist/engine/backends/llama-cpp/native-module.js";

const modelFile = (name) => (name.endsWith(".gguf") ? name : join(process.env.KILN_HOME ?? join(homedir(), ".kiln"), "models", `${name}.gguf`));
const onGpu = process.env.BENCH_SAMPLER_GPU === "1";
const RESULTS_DIR = fileURLToPath(new URL("./results/", import.meta.url));
const models = (process.env.BENCH_SAMPLER_MODELS ?? "smollm2-135m,qwen2.5-coder-0.5b").split(",");
const sequenceCounts = (process.env.BENCH_SAMPLER_SEQUENCES ?? "8,32,64").split(",").map(Number);
const rounds = Number(process.env.BENCH_SAMPLER_ROUNDS ?? 30);
const SAMPLINGS = { "default (t 0.8, top-k 40)": { temperature: 0.8, topK: 40, topP: 0.95, minP: 0.05 }, greedy: { temperature: 0 } };

/** Whether the row's best `k` + 1 logits hold two equal values (read through a greedy sampler's logits report). */
async function hasTopTies(nativeContext, model, row, k) {
  const greedy = new llama._bindings.AddonSampler(model._model);
  greedy.applyConfig({ temperature: 0 });
  try {
    const [, , , logits] = await nativeContext.sampleToken(row, greedy, false, false, [[], false, false, false, k + 1], false);
    const values = logits.filter((_, i) => i % 2 === 1);
    return new Set(values).size < values.length;
  } finally {
    greedy.dispose();
  }
}

const native = loadNativeModule();
if (!native) throw new Error("build/kiln-native.node is missing: run npm run build");
const llama = await getLlama({ gpu: onGpu ? "auto" : false, build: "never" });
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const rows = [];

for (const name of models) {
  const model = await llama.loadModel({ modelPath: modelFile(name), gpuLayers: onGpu ? "max" : 0 });
  for (const count of sequenceCounts) {
    const context = await model.createContext({ contextSize: count * 64, sequences: count, threads: 2 });
    const handles = nativeHandles(context, model);
    const nativeContext = handles.context;
    const stepContext = native.stepContext(handles.context, handles.model, nativeContext.getContextSize(), count, loadedLibraries().libllama);
    // One decode step: a different first token for each sequence, logits for each.
    nativeContext.initBatch(count);
    const outputs = [];
    for (let s = 0; s < count; s++) outputs.push(nativeContext.addToBatch(s, 0, Uint32Array.of(100 + s * 7), Uint32Array.of(0))[0]);
    await nativeContext.decodeBatch();
    for (const [label, sampling] of Object.entries(SAMPLINGS)) {
      const samplers = outputs.map((_, s) => {
        const sampler = new llama._bindings.AddonSampler(model._model);
        sampler.applyConfig({ topK: 40, topP: 0.95, minP: 0, ...sampling, seed: s + 1 });
        return sampler;
      });
      const states = outputs.map(() => native.sequenceSampler());
      const params = new Float64Array(outputs.flatMap((_, s) => [sampling.temperature, sampling.topK ?? 1, sampling.topP ?? 1, sampling.minP ?? 0, s + 1]));
      const indexes = Int32Array.from(outputs);
      const times = { perSequence: [], oneCall: [] };
      for (let round = 0; round <= rounds; round++) {
        let t0 = performance.now();
        const alone = await Promise.all(outputs.map((row, s) => nativeContext.sampleToken(row, samplers[s])));
        const aloneMs = performance.now() - t0;
        t0 = performance.now();
        const together = await native.sampleStep(stepContext, nativeContext, indexes, params, states);
        const togetherMs = performance.now() - t0;
        if (round === 0) {
          // Same seeds, same logits: the first draws agree (later rounds draw on from each generator's state), except
          // where the candidates hold exact ties, which the two top-k selections may order differently (a random-weight
          // model's logits come in groups of equal values: 9-10 distinct values among the 41 best).
          const differ = outputs.filter((_, s) => alone[s] !== together[s]);
          const unexplained = [];
          for (const row of differ) if (!(await hasTopTies(nativeContext, model, row, sampling.topK ?? 1))) unexplained.push(row);
          if (unexplained.length > 0) throw new Error(`${name}, ${count} sequences, ${label}: ${unexplained.length} first draws differ without ties among the candidates`);
          if (differ.length > 0) console.error(`${name}, ${count} sequences, ${label}: ${differ.length} first draws differ, each row with exact ties among its best ${sampling.topK ?? 1} logits`);
          continue;
        }
        times.perSequence.push(aloneMs);
        times.oneCall.push(togetherMs);
      }
      for (const sampler of samplers) sampler.dispose();
      const row = {
        model: name.split("/").at(-1).replace(/\.gguf$/, ""), sequences: count, sampling: label,
        perSequenceMs: Math.round(median(times.perSequence) * 100) / 100,
        oneCallMs: Math.round(median(times.oneCall) * 100) / 100,
      };
      rows.push(row);
      console.error(JSON.stringify(row));
    }
    await context.dispose();
  }
  await model.dispose();
}

const result = { date: new Date().toISOString(), machine: describeMachine(), gpu: llama.gpu, rounds, rows };
const file = join(RESULTS_DIR, `${result.date.slice(0, 10)}-${hostname()}-step-sampler${llama.gpu ? "-gpu" : ""}`);
writeFileSync(`${file}.json`, `${JSON.stringify(result, null, 2)}\n`);
writeFileSync(`${file}.md`, [
  `# Sampling one decode step, ${result.date.slice(0, 10)}`, "",
  `${result.machine.cpu.model} (family ${result.machine.cpu.family}, model ${result.machine.cpu.modelNumber}), ${result.machine.logicalCpus} CPUs, load average ${result.machine.loadAverageAtStart.join(" / ")} at the start; node-llama-cpp ${result.machine.nodeLlamaCpp}, llama.cpp ${result.gpu ? `on ${result.gpu}` : "CPU build"}; median of ${rounds} rounds, same logits, alternating.`, "",
  "| model | sequences | sampling | node-llama-cpp, a call per sequence (ms) | kiln, one call for the step (ms) | ratio |",
  "| --- | --- | --- | --- | --- | --- |",
  ...rows.map((r) => `| ${r.model} | ${r.sequences} | ${r.sampling} | ${r.perSequenceMs} | ${r.oneCallMs} | ${(r.perSequenceMs / r.oneCallMs).toFixed(1)}× |`),
  "",
].join("\n"));
console.error(`wrote ${file}.md`);
await llama.dispose();
