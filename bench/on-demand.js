/**
 * `node bench/on-demand.js`: models on demand in one `kiln serve` (the default model declared, the coder model in the
 * store). Measures the coder model's first request (its load plus the usual time to first token) against a
 * second one, the largest and median gaps between the tokens of a stream of the default model alone and while the coder model loads, the server's resident memory before the load, with both models loaded and after the coder model's
 * keep-alive (2 s) has unloaded it, and the KV cache the start-up line reports with f16 and with q8_0 K and V.
 * Prints one JSON object; build first (npm run build).
 */
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { cpus } from "node:os";
import { fileURLToPath } from "node:url";

const bin = fileURLToPath(new URL("../bin/kiln.js", import.meta.url));
const CODER = "qwen2.5-coder-0.5b";

/** Starts `kiln serve` and resolves once it prints its auth line (the end of its start-up report). */
function startServe(args) {
  const child = spawn(process.execPath, [bin, "serve", "--port", "0", "--log-level", "warn", ...args], { stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  return new Promise((resolve, reject) => {
    child.stderr.setEncoding("utf8").on("data", (chunk) => {
      stderr += chunk;
      const url = /^Anthropic base URL: (\S+)/m.exec(stderr)?.[1];
      if (url && /^auth: /m.test(stderr)) resolve({ child, url, stderr: () => stderr });
    });
    child.once("exit", (code) => reject(new Error(`kiln serve exited (${code}):\n${stderr}`)));
  });
}

const rssMiB = (pid) => Math.round(Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))[1]) / 1024);

/** One streamed chat request: ms to the first content token and in all. */
async function timeRequest(url, model) {
  const started = performance.now();
  const response = await fetch(`${url}/v1/chat/completions`, {
    method: "POST", headers: { "content-type": "application/json" },
    body: JSON.stringify({ model, stream: true, max_tokens: 16, temperature: 0, messages: [{ role: "user", content: "Write a Python function that adds two numbers." }] }),
  });
  if (!response.ok) throw new Error(`${model}: HTTP ${response.status} ${await response.text()}`);
  let first;
  const decoder = new TextDecoder();
  for await (const chunk of response.body) {
    if (first === undefined && /"content":"[^"]/.test(decoder.decode(chunk))) first = performance.now() - started;
  }
  return { ttftMs: Math.round(first), totalMs: Math.round(performance.now() - started) };
}

/**
 * A long streamed request: its token count, its time to the first chunk with text, and the largest and median gaps
 * between the chunks after it (ms): the gaps of its generation, not its prompt's evaluation.
 */
async function streamGaps(url, model) {
  const started = performance.now();
  const response = await fetch(`${url}/v1/chat/completions`, {
    method: "POST", headers: { "content-type": "application/json" },
    body: JSON.stringify({ model, stream: true, max_tokens: 400, temperature: 0, messages: [{ role: "user", content: "Tell a long story about a kiln." }] }),
  });
  const decoder = new TextDecoder();
  let last;
  let firstMs;
  const gaps = [];
  let chunks = 0;
  for await (const chunk of response.body) {
    const now = performance.now();
    chunks += 1;
    if (last !== undefined) gaps.push(now - last);
    if (last === undefined && /"content":"[^"]/.test(decoder.decode(chunk))) firstMs = now - started;
    if (firstMs !== undefined) last = now;
  }
  gaps.sort((a, b) => a - b);
  return { chunks, firstTokenMs: Math.round(firstMs), maxGapMs: Math.round(gaps.at(-1) ?? 0), medianGapMs: Math.round(gaps[gaps.length >> 1] ?? 0) };
}

async function listed(url) {
  const body = await (await fetch(`${url}/v1/models`)).json();
  return Object.fromEntries(body.data.map((m) => [m.id, m.details]));
}

async function main() {
  const result = { cpu: cpus()[0]?.model, cores: cpus().length };
  // The default model declared, so it stays; the coder model loads on demand and unloads 2 s after its last request.
  const serve = await startServe(["--model", "smollm2-135m", "--keep-alive", "2s", "--ctx-size", "4096", "--parallel", "1"]);
  try {
    const pid = serve.child.pid;
    result.rssAtStartMiB = rssMiB(pid);
    // A stream of the default model alone, then while the coder model loads: its largest gap between tokens.
    result.defaultStreamAlone = await streamGaps(serve.url, "smollm2-135m");
    const beside = streamGaps(serve.url, "smollm2-135m");
    result.coderFirstRequest = await timeRequest(serve.url, CODER);
    result.defaultStreamDuringLoad = await beside;
    const metrics = await (await fetch(`${serve.url}/metrics`)).text();
    result.coderLoadSeconds = Number(new RegExp(`kiln_model_load_seconds\\{model="${CODER}"\\} (\\S+)`).exec(metrics)?.[1]);
    result.coderSecondRequest = await timeRequest(serve.url, CODER);
    result.rssBothLoadedMiB = rssMiB(pid);
    result.coderReportedMemoryMiB = Math.round((await listed(serve.url))[CODER].memory / 1024 ** 2);
    while ((await listed(serve.url))[CODER].loaded) await new Promise((resolve) => setTimeout(resolve, 250));
    await new Promise((resolve) => setTimeout(resolve, 1000));
    result.rssAfterCoderUnloadedMiB = rssMiB(pid);
  } finally {
    serve.child.kill("SIGTERM");
  }
  for (const types of [[], ["--cache-type-k", "q8_0", "--cache-type-v", "q8_0"]]) {
    const kv = await startServe(["--model", CODER, "--ctx-size", "32768", "--parallel", "1", ...types]);
    const line = kv.stderr().split("\n").find((l) => l.startsWith(`model ${CODER}`));
    const details = (await listed(kv.url))[CODER];
    result[types.length ? "q8_0" : "f16"] = { line, kvCacheMiB: Math.round(details.kvCacheBytes / 1024 ** 2), contextMemoryMiB: Math.round(details.contextMemory / 1024 ** 2), rssMiB: rssMiB(kv.child.pid) };
    kv.child.kill("SIGTERM");
    await new Promise((resolve) => kv.child.once("exit", resolve));
  }
  console.log(JSON.stringify(result, null, 2));
}

await main();
