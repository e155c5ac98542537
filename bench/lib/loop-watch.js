/**
 * One request against an in-process server, with its event loop and /health watched: the longest event-loop delay
 * while the request ran, and the slowest /health answer, polled every 20 ms by a separate process (so its clock is
 * not the server's loop).
 */
import { spawn } from "node:child_process";
import { request as httpRequest } from "node:http";
import { monitorEventLoopDelay } from "node:perf_hooks";

/** The poller: prints the slowest /health answer when its stdin closes. */
const POLLER = `
let max = 0, stop = false;
process.stdin.on("end", () => { stop = true; }).resume();
(async () => {
  while (!stop) {
    const t0 = performance.now();
    await fetch(process.argv[1] + "/health").then((r) => r.text(), () => {});
    max = Math.max(max, performance.now() - t0);
    await new Promise((r) => setTimeout(r, 20));
  }
  console.log(Math.round(max));
})();`;

/** POST on a fresh connection (a blocked server may close kept-alive ones); resolves with status and body. */
export function post(url, body) {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: "POST", agent: false, headers: { "content-type": "application/json" } }, (res) => {
      let text = "";
      res.setEncoding("utf8").on("data", (chunk) => (text += chunk)).on("end", () => resolve({ status: res.statusCode, text }));
    });
    req.on("error", reject);
    req.end(body);
  });
}

/** POSTs `text` to `serverUrl + path` while watching; resolves with the status, duration, loop delay and /health. */
export async function watchRequest(serverUrl, path, text) {
  const poller = spawn(process.execPath, ["-e", POLLER, serverUrl], { stdio: ["pipe", "pipe", "inherit"] });
  let healthMax = "";
  poller.stdout.on("data", (chunk) => (healthMax += chunk));
  await new Promise((resolve) => setTimeout(resolve, 500));
  const delay = monitorEventLoopDelay({ resolution: 5 });
  delay.enable();
  const t0 = performance.now();
  const response = await post(`${serverUrl}${path}`, text);
  const durationMs = performance.now() - t0;
  delay.disable();
  poller.stdin.end();
  await new Promise((resolve) => poller.on("close", resolve));
  return { status: response.status, durationMs: Math.round(durationMs), loopDelayMaxMs: Math.round(delay.max / 1e6), healthMaxMs: Number(healthMax), answer: response.text.slice(0, 120) };
}
