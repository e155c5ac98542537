/**
 * `node bench/investigate/start-up.js`: how long a command takes to start, builds side by side. MODE=run (default)
 * times a whole one-token `kiln run` (stdin closed); MODE=serve times `kiln serve --port 0 --no-auth` from its spawn to
 * the last line of its start-up report. Builds take turns, the order reversed every round:
 * KILN_BINS="/path/a/bin/kiln.js,/path/b/bin/kiln.js" (default: this checkout's). ROUNDS (default 8), MODEL (default:
 * the default model), KILN_HOME (default: the user's), BUSY=1 keeps one core busy throughout. Any other environment
 * (VK_ICD_FILENAMES, for one) reaches the commands. Prints one line per build: median, min, max and every run (ms).
 */
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { startBusyCore } from "../lib/long-prompts.js";

const bins = (process.env.KILN_BINS ?? fileURLToPath(new URL("../../bin/kiln.js", import.meta.url))).split(",");
const rounds = Number(process.env.ROUNDS ?? 8);
const serve = process.env.MODE === "serve";
const model = process.env.MODEL ? ["--model", process.env.MODEL] : [];
const args = serve ? ["serve", "--port", "0", "--no-auth", ...model] : ["run", ...model, "--max-tokens", "1", "--temperature", "0", "Hi"];

/** Milliseconds from spawning `bin` to the end of its run (run) or of its start-up report (serve). */
function once(bin) {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(process.execPath, [bin, ...args], { stdio: ["ignore", "ignore", "pipe"] });
    let stderr = "";
    let ready;
    child.stderr.setEncoding("utf8").on("data", (chunk) => {
      stderr += chunk;
      if (serve && ready === undefined && /^auth: /m.test(stderr)) {
        ready = performance.now() - started;
        child.kill("SIGTERM");
      }
    });
    child.once("exit", (code) => {
      if (serve ? ready !== undefined : code === 0 && stderr === "") resolve(ready ?? performance.now() - started);
      else reject(new Error(`${bin} ${args.join(" ")}: exit ${code}\n${stderr}`));
    });
  });
}

const stopBusy = process.env.BUSY === "1" ? startBusyCore() : undefined;
const times = new Map(bins.map((bin) => [bin, []]));
for (let round = 0; round < rounds; round++) {
  for (const bin of round % 2 ? [...bins].reverse() : bins) {
    times.get(bin).push(Math.round(await once(bin)));
    await new Promise((resolve) => setTimeout(resolve, 300));
  }
}
stopBusy?.();

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length / 2;
  return sorted.length % 2 ? sorted[Math.floor(middle)] : (sorted[middle - 1] + sorted[middle]) / 2;
};
for (const [bin, values] of times) {
  console.log(`${bin}: median ${median(values)} ms, min ${Math.min(...values)}, max ${Math.max(...values)}; runs ${values.join(", ")}`);
}
