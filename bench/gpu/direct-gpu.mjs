// node-llama-cpp called directly (GPU auto): batched decode at 1/8/32 sequences and prompt processing, the ceiling
// kiln's llama.cpp path is compared with; a long prompt's rate in a one-sequence context and in the servers' shape.
import { measureGeneration, measurePromptRate } from "../lib/direct.js";
const { getLlama, LlamaLogLevel } = await import("node-llama-cpp");
const llama = await getLlama({ build: "never", gpu: "auto", logLevel: LlamaLogLevel.warn });
const model = await llama.loadModel({ modelPath: process.argv[2] });
const direct = { llama, model };
const words = "the kiln fires clay slowly while potters watch glaze melt across a bowl of river stone".split(" ");
const text = (i, n) => `Request ${i}. ` + Array.from({ length: n }, (_, k) => words[(k * 7 + i) % words.length]).join(" ");
const out = (o) => console.log(JSON.stringify({ tag: "direct", gpu: llama.gpu, ...o }));
for (const n of process.env.DIRECT_GENERATION === "0" ? [] : [1, 8, 32]) {
  const r = await measureGeneration(direct, { ctxPerSequence: 1024, threads: 4 }, { sequences: n, promptTokensFor: (i) => model.tokenize(text(i, 170)), maxTokens: 128 });
  out({ sequences: n, aggregateTokPerS: Math.round(r.aggregateTokensPerSecond), seconds: r.seconds, tokens: r.tokens.reduce((a, b) => a + b, 0) });
}
const long = model.tokenize(text(99, 6300));
// The prompt alone in a one-sequence context, then in a context shaped like the servers' (PARALLEL sequences), with
// flash attention forced off and on (node-llama-cpp's, llama-server's and kiln's default, auto, turns it on on a GPU).
// DIRECT_LONG picks shapes as "sequences:on|off" pairs, e.g. "64:on".
const parallel = Number(process.env.PARALLEL ?? 64);
const shapes = (process.env.DIRECT_LONG ?? `1:off,1:on,${parallel}:off,${parallel}:on`).split(",").map((shape) => shape.split(":"));
for (const [sequences, fa] of shapes) {
  const flashAttention = fa === "on";
  const rates = await measurePromptRate(direct, { ctxPerSequence: 10240, parallel: Number(sequences), threads: 4, singleStreamRepeats: 3, flashAttention }, long);
  out({ promptTokens: long.length, sequences: Number(sequences), flashAttention, promptTokPerS: rates.map(Math.round) });
}
process.exit(0);
