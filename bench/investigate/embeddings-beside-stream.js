/**
 * An embedding batch beside a stream on one model: `kiln serve` with the default model; a 32-text /v1/embeddings
 * batch alone, then a 300-token stream alone and the same stream with the batch sent 0.7 s into it (two rounds). Prints
 * the batch's time, and the stream's total, largest and median gap (ms), alone and beside the batch.
 * Usage: npm run build && node bench/investigate/embeddings-beside-stream.js   (env: KILN_BIN, another build's bin/kiln.js;
 * MODEL, default smollm2-135m; TEXTS, default 32; STREAM_TOKENS, default 300)
 */
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
const MODEL = process.env.MODEL ?? "smollm2-135m";
const TEXTS = Number(process.env.TEXTS ?? 32);
const STREAM_TOKENS = Number(process.env.STREAM_TOKENS ?? 300);
const port = 9051;
const child = spawn(process.execPath, [process.env.KILN_BIN ?? fileURLToPath(new URL("../../bin/kiln.js", import.meta.url)), "serve", "--no-auth", "--port", String(port), "--log-level", "warn", "--model", MODEL, "--parallel", "4", "--ctx-size", "2048", "--cache-disk", "0"], { stdio: ["ignore", "ignore", "pipe"], env: { ...process.env, KILN_HOME: `${process.env.TMPDIR ?? "/tmp"}/kiln-embeddings-beside-stream` } });
let err = ""; child.stderr.on("data", (d) => { err += d; });
for (let i = 0; i < 200 && !/auth: /m.test(err); i++) await new Promise((r) => setTimeout(r, 250));
const url = `http://127.0.0.1:${port}`;
await new Promise((r) => setTimeout(r, 2000));
async function stream(tag) {
  const t0 = performance.now(); const times = [];
  const res = await fetch(`${url}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model: MODEL, stream: true, max_tokens: STREAM_TOKENS, temperature: 0, ignore_eos: true, messages: [{ role: "user", content: `Tell a story ${tag}` }] }) });
  const dec = new TextDecoder();
  for await (const chunk of res.body) if (/"content":"[^"]/.test(dec.decode(chunk))) times.push(performance.now() - t0);
  const gaps = times.slice(1).map((t, i) => t - times[i]).sort((a, b) => a - b);
  return { maxGap: Math.round(gaps.at(-1)), p50: Math.round(gaps[gaps.length >> 1]), total: Math.round(performance.now() - t0) };
}
const texts = Array.from({ length: TEXTS }, (_, i) => `Document ${i}: ` + "The kiln fires clay into stoneware at high heat. ".repeat(6));
for (let r = 0; r < 2; r++) {
  { const t0 = performance.now(); const e = await fetch(`${url}/v1/embeddings`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model: MODEL, input: texts }) }); await e.json(); console.log("embeddings alone ms", Math.round(performance.now() - t0)); }
  const alone = await stream(`alone ${r}`);
  const s = stream(`beside ${r}`);
  await new Promise((res) => setTimeout(res, 700));
  const t0 = performance.now();
  const e = await fetch(`${url}/v1/embeddings`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model: MODEL, input: texts }) });
  const embMs = Math.round(performance.now() - t0); await e.json();
  console.log(JSON.stringify({ alone, beside: await s, embeddingsMs: embMs, status: e.status }));
}
child.kill("SIGINT");
