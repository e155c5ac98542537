// Where a long uncached prompt's time to first token goes in kiln, in process (no HTTP): each decode step's start and
// end at node-llama-cpp's native batch, beside node-llama-cpp evaluating the same prompt alone in a context of the same
// shape. Usage: node bench/gpu/long-prompt-probe.mjs <model.gguf>. Env: PARALLEL (64), CTX (10240 per sequence), WORDS
// (6300), ROUNDS (3). Prints one JSON line per round and side.
import { loadLlamaCppModel } from "../../dist/engine/backends/llama-cpp/llama-cpp-model.js";
import { openLlama } from "../../dist/engine/backends/llama-cpp/load-llama.js";

const [path] = process.argv.slice(2);
const parallel = Number(process.env.PARALLEL ?? 64);
const ctx = Number(process.env.CTX ?? 10240);
const rounds = Number(process.env.ROUNDS ?? 3);
const words = "the kiln fires clay slowly while potters watch glaze melt across a bowl of river stone".split(" ");
const text = (seed) => `Request ${seed}. ` + Array.from({ length: Number(process.env.WORDS ?? 6300) }, (_, k) => words[(k * 7 + seed) % words.length]).join(" ");

/** Records [start, end, tokens] of every decode of a node-llama-cpp context, relative to `zero()`. */
function timeDecodes(context, zero) {
  const native = context._ctx;
  const { initBatch, decodeBatch } = native;
  const steps = [];
  let tokens = 0;
  Object.defineProperty(native, "initBatch", { configurable: true, value: (size) => { tokens = size; return initBatch.call(native, size); } });
  Object.defineProperty(native, "decodeBatch", { configurable: true, value: () => {
    const step = [performance.now() - zero(), 0, tokens];
    steps.push(step);
    return decodeBatch.call(native).finally(() => { step[1] = performance.now() - zero(); });
  } });
  return steps;
}

const summary = (side, round, total, steps, extra = {}) => {
  const decode = steps.reduce((sum, [start, end]) => sum + end - start, 0);
  const gaps = steps.slice(1).map(([start], i) => start - steps[i][1]);
  console.log(JSON.stringify({ side, round, totalMs: Math.round(total), steps: steps.length, firstDecodeAtMs: Math.round(steps[0]?.[0] ?? 0),
    decodeMs: Math.round(decode), gapsMs: Math.round(gaps.reduce((a, b) => a + b, 0)), maxGapMs: Math.round(Math.max(0, ...gaps)),
    afterLastMs: Math.round(total - (steps.at(-1)?.[1] ?? 0)), tokens: steps.map((s) => s[2]).join(" "), ...extra }));
};

const llama = await openLlama("auto");
const model = await loadLlamaCppModel({ id: "m", path, llama, parallel, ctxSize: ctx, warmUp: true, prefixCache: false, prefillLane: false });
await model.warmUp();
let zero = 0;
const kilnSteps = timeDecodes(model.context, () => zero);
const nodeModel = model.model;
const direct = await nodeModel.createContext({ contextSize: ctx, sequences: parallel });
const directSteps = timeDecodes(direct, () => zero);
const sequence = direct.getSequence();
for (let round = 0; round < rounds; round++) {
  kilnSteps.length = 0;
  zero = performance.now();
  let first = 0;
  let input = 0;
  for await (const event of model.complete({ model: "m", prompt: text(round), maxTokens: 1, sampling: { temperature: 0 } })) {
    if (event.type === "start") input = event.inputTokens;
    if (event.type === "text-delta" && !first) first = performance.now() - zero;
  }
  summary("kiln", round, first || performance.now() - zero, kilnSteps, { promptTokens: input });
  const tokens = nodeModel.tokenize(text(round + 100));
  await sequence.clearHistory();
  directSteps.length = 0;
  zero = performance.now();
  await sequence.evaluateWithoutGeneratingNewTokens(tokens);
  summary("node-llama-cpp", round, performance.now() - zero, directSteps, { promptTokens: tokens.length });
}
await direct.dispose();
await model.dispose();
process.exit(0);
