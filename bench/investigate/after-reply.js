/**
 * What a server costs the machine right after a reply: its CPU time in the 300 ms after a short reply (ggml's pool
 * workers poll for the next step before they sleep), and how long the client then takes for a fixed CPU task on two
 * threads (an agent running a build or tests between turns, on the same 2 cores). Two kiln builds alternate ABBA.
 * Usage: npm run build && KILN_BEFORE=<another build's bin/kiln.js> node bench/investigate/after-reply.js   (env: ROUNDS=10)
 */
import { readFileSync } from "node:fs";
import { Worker } from "node:worker_threads";
import { readSettings } from "../lib/config.js";
import { startKiln } from "../lib/servers.js";

const settings = readSettings();
const rounds = Number(process.env.ROUNDS ?? 10);
const sides = [
  ["before", await startKiln(settings, { bin: process.env.KILN_BEFORE })],
  ["after", await startKiln(settings)],
];
const work = `const { parentPort } = require("node:worker_threads");
parentPort.on("message", (n) => { let x = 0; for (let i = 0; i < n; i++) x = (x * 31 + i) % 1000003; parentPort.postMessage(x); });`;
const workers = [new Worker(work, { eval: true }), new Worker(work, { eval: true })];
const task = (n) => Promise.all(workers.map((worker) => new Promise((resolve) => {
  worker.once("message", resolve);
  worker.postMessage(n);
})));
/** A process's user + system CPU time in ms. */
const cpuMs = (pid) => {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10;
};
const reply = (server, round) => fetch(`${server.baseUrl}/v1/chat/completions`, {
  method: "POST", headers: { "content-type": "application/json" },
  body: JSON.stringify({ model: server.model, max_tokens: 32, temperature: 0, messages: [{ role: "user", content: `turn ${round} ${Math.random()}` }] }),
}).then((response) => response.text());
const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// The task's size: ~120 ms a thread on a quiet machine.
let n = 1e6;
for (;;) {
  const started = performance.now();
  await task(n);
  if (performance.now() - started > 120) break;
  n *= 2;
}
const results = new Map(sides.map(([label]) => [label, { serverMs: [], taskMs: [] }]));
try {
  for (let round = 0; round < rounds; round++) {
    for (const [label, server] of round % 2 ? [...sides].reverse() : sides) {
      const r = results.get(label);
      await pause(600);
      await reply(server, round);
      const before = cpuMs(server.pid);
      await pause(300);
      r.serverMs.push(cpuMs(server.pid) - before);
      await pause(600);
      await reply(server, round);
      const started = performance.now();
      await task(n);
      r.taskMs.push(performance.now() - started);
    }
  }
} finally {
  for (const [, server] of sides) await server.stop();
  for (const worker of workers) await worker.terminate();
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
console.log(`| side | server CPU ms in the 300 ms after a reply (median; rounds) | client's two-thread task ms (median; rounds) |\n| --- | --- | --- |`);
for (const [label, r] of results) {
  console.log(`| ${label} | ${median(r.serverMs)} (${r.serverMs.join(", ")}) | ${median(r.taskMs).toFixed(0)} (${r.taskMs.map((x) => x.toFixed(0)).join(", ")}) |`);
}
