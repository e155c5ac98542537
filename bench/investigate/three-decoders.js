/**
 * Three decoders at once: a 300-token stream of the default model, a ~2,900-token prompt to the same model (which its
 * prefill lane evaluates beside the stream) and, 1.2 s later, a short request to a second model (Qwen2.5-Coder-0.5B),
 * both models loaded at start. Prints each request's time to first token, total and largest / median gap (ms), for
 * a first round (nothing cached) and a second (the long prompt cached).
 * Usage: npm run build && node bench/investigate/three-decoders.js [path/to/bin/kiln.js] [port]
 */
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
const bin = process.argv[2] ?? fileURLToPath(new URL("../../bin/kiln.js", import.meta.url));
const port = Number(process.argv[3] ?? 9011);
const child = spawn(process.execPath, [bin, "serve", "--no-auth", "--port", String(port), "--log-level", "warn", "--model", "smollm2-135m", "--model", "qwen2.5-coder-0.5b", "--parallel", "4", "--ctx-size", "4096", "--cache-disk", "0"], { stdio: ["ignore", "ignore", "pipe"], env: { ...process.env, KILN_HOME: `${process.env.TMPDIR ?? "/tmp"}/kiln-three-decoders-${port}` } });
let err = ""; child.stderr.on("data", (d) => { err += d; });
for (let i = 0; i < 200 && !/auth: /m.test(err); i++) await new Promise((r) => setTimeout(r, 250));
const url = `http://127.0.0.1:${port}`;
await new Promise((r) => setTimeout(r, 3000));
async function stream(model, content, maxTokens) {
  const t0 = performance.now(); const times = [];
  const res = await fetch(`${url}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model, stream: true, max_tokens: maxTokens, temperature: 0, ignore_eos: true, messages: [{ role: "user", content }] }) });
  if (!res.ok) return { status: res.status, body: (await res.text()).slice(0, 200) };
  const dec = new TextDecoder();
  for await (const chunk of res.body) if (/"content":"[^"]/.test(dec.decode(chunk))) times.push(performance.now() - t0);
  const gaps = times.slice(1).map((t, i) => t - times[i]).sort((a, b) => a - b);
  return { ttft: Math.round(times[0]), total: Math.round(performance.now() - t0), maxGap: Math.round(gaps.at(-1) ?? 0), p50Gap: Math.round(gaps[gaps.length >> 1] ?? 0), n: times.length };
}
const longText = Array.from({ length: 110 }, (_, i) => `Line ${i}: the kiln fired pot number ${i * 7} at ${900 + i} degrees.`).join("\n");
const out = {};
for (let round = 0; round < 2; round++) {
  const a = stream("smollm2-135m", `Tell a long story ${round}.`, 300);
  await new Promise((r) => setTimeout(r, 800));
  const lane = stream("smollm2-135m", `${longText}\nSummarize ${round}.`, 8);
  await new Promise((r) => setTimeout(r, 1200));
  const b = stream("qwen2.5-coder-0.5b", `Write a Python function that adds two numbers ${round}.`, 16);
  out[round] = { streamA: await a, laneA: await lane, modelB: await b };
}
console.log(JSON.stringify(out));
child.kill("SIGINT");
