/**
 * The event loop of a real server (in-process, loopback, the default model) while one client sends a body of many
 * messages: its status, duration, the longest event-loop delay and the slowest /health answer (polled every 20 ms
 * by another process, so its clock is not the server's loop). "before" is a build of an earlier commit
 * (KILN_BASELINE=<its dist folder>), "after" this build.
 * Usage: npm run build && KILN_BASELINE=/path/to/old/dist node bench/investigate/huge-bodies.js
 */
import { post, watchRequest } from "../lib/loop-watch.js";
import { describeMachine } from "../lib/machine.js";
import { readSettings } from "../lib/config.js";

const settings = readSettings();
const sides = [["after", new URL("../../dist/", import.meta.url).href]];
if (process.env.KILN_BASELINE) sides.unshift(["before", new URL(`file://${process.env.KILN_BASELINE.replace(/\/?$/, "/")}`).href]);

const turns = (count) => Array.from({ length: count }, (_, i) => ({ role: i % 2 === 0 || i === count - 1 ? "user" : "assistant", content: `turn ${i}: please look at line ${i * 7} of the file` }));
const cases = [
  ["count_tokens, 100,000 messages", "/v1/messages/count_tokens", { model: "m", messages: turns(100_000) }],
  ["chat completions, 100,000 messages", "/v1/chat/completions", { model: "m", max_tokens: 2, messages: turns(100_000) }],
  ["count_tokens, 10,000 messages (at the cap)", "/v1/messages/count_tokens", { model: "m", messages: turns(10_000) }],
];

console.log(describeMachine());
for (const [side, dist] of sides) {
  const { createEngine } = await import(`${dist}engine/index.js`);
  const { createServer } = await import(`${dist}server/app.js`);
  const engine = await createEngine({ models: [{ id: "m", path: settings.modelPath }], parallel: 1, ctxSize: 4096, threads: settings.threads });
  const server = await createServer(engine).listen({ host: "127.0.0.1", port: 0 });
  await post(`${server.url}/v1/messages/count_tokens`, JSON.stringify(cases[2][2])); // warm-up (prompt thread)
  for (const [name, path, body] of cases) {
    const text = JSON.stringify(body);
    console.log(JSON.stringify({ side, case: name, bytes: text.length, ...(await watchRequest(server.url, path, text)) }));
  }
  await server.close();
  await engine.close();
}
