/**
 * The first turn after a restart, with and without the prompt worker started at load, one core kept busy:
 *   MODEL=<gguf> node bench/investigate/restart-warm-worker.mjs <kiln bin, worker warmed> <kiln bin, warmUp: false>
 * (the second a copy of the built tree with `warmUp: true` turned to false in dist/cli/serve-engine.js). One cold
 * turn fills the disk tier; then the two alternate, each restarted, on the same system prompt with a new question.
 */
import { spawn } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { agentSystemPrompt, agentTurn } from "../lib/prompts.js";
import { streamChat } from "../lib/sse-client.js";
const bins = { A: process.argv[2], B: process.argv[3] };
const home = mkdtempSync(join(tmpdir(), "kiln-restart-warm-"));
const port = 5611;
const busy = spawn(process.execPath, ["-e", "for(;;){}"], { stdio: "ignore" });
async function start(variant) {
  const p = spawn(process.execPath, [bins[variant], "serve", "--host", "127.0.0.1", "--port", String(port), "--model", `coder=${process.env.MODEL}`, "--parallel", "1", "--ctx-size", "16384", "--threads", "2", "--log-level", "error"], { env: { ...process.env, KILN_HOME: home }, stdio: "ignore" });
  for (;;) { try { if ((await fetch(`http://127.0.0.1:${port}/health`)).ok) break; } catch {} await new Promise((r) => setTimeout(r, 200)); }
  return p;
}
const stop = async (p) => { p.kill("SIGTERM"); await new Promise((r) => p.once("exit", r)); };
const system = { role: "system", content: agentSystemPrompt(4000) };
const ask = async (n) => streamChat(`http://127.0.0.1:${port}`, { model: "coder", messages: [system, { role: "user", content: `Session ${n}: ${agentTurn(n, 1).user}` }], maxTokens: 16, timeoutMs: 900000 });
let p = await start("A");
const cold = await ask(1);
console.log(`cold: ttft ${cold.ttftMs.toFixed(0)} ms, prompt ${cold.promptTokens}`);
await stop(p);
let n = 2;
for (const variant of ["B", "A", "B", "A"]) {
  p = await start(variant);
  const t = await ask(n++);
  console.log(`after restart ${variant === "A" ? "warmed" : "lazy  "}: ttft ${t.ttftMs.toFixed(0)} ms, cached ${t.cachedTokens} of ${t.promptTokens}`);
  await stop(p);
}
busy.kill("SIGKILL");
