/**
 * Huge prompts, before and after plain-text tokenization and the tokenizer thread, in one run:
 *  1. tokenizing an N-turn conversation: the earlier way (the rendered prompt tokenized in one call with special
 *     tokens parsed, quadratic in the number of turn markers) vs kiln's (split at the template's markup in JS,
 *     plain pieces without special-token parsing, large prompts on the tokenizer thread);
 *  2. the event loop of a real server (in-process, loopback) while one client sends an enormous request: the
 *     longest event-loop delay and the slowest /health answer (polled every 20 ms) during the request.
 *     "before" is a build of an earlier commit (KILN_BASELINE=<its dist folder>), "after" this build.
 * Usage: npm run build && KILN_BASELINE=/path/to/old/dist node bench/investigate/huge-prompts.js
 *   (env: TURNS=8000,32000; KILN_BASELINE unset: part 2 measures this build only)
 */
import { writeFileSync } from "node:fs";
import { post, watchRequest } from "../lib/loop-watch.js";
import { describeMachine } from "../lib/machine.js";
import { readSettings } from "../lib/config.js";

const settings = readSettings();
const turnCounts = (process.env.TURNS ?? "8000,32000").split(",").map(Number);
const sides = [["after", new URL("../../dist/", import.meta.url).href]];
if (process.env.KILN_BASELINE) sides.unshift(["before", new URL(`file://${process.env.KILN_BASELINE.replace(/\/?$/, "/")}`).href]);
const results = { machine: describeMachine(), model: settings.modelPath, tokenize: [], server: [] };

const conversation = (turns) => ({
  model: "m",
  maxTokens: 8,
  messages: Array.from({ length: turns }, (_, i) => ({ role: i % 2 === 0 || i === turns - 1 ? "user" : "assistant", parts: [{ type: "text", text: `turn ${i}: please look at line ${i * 7} of the file` }] })),
});

/** Part 1, in this build: the earlier one-call tokenization against kiln's. */
async function measureTokenize() {
  const { loadVocabulary } = await import("../../dist/engine/text/load-vocabulary.js");
  const { renderChatPrompt } = await import("../../dist/engine/text/render-prompt.js");
  const { tokenizeChat } = await import("../../dist/engine/generation-plan.js");
  const { vocabulary, dispose } = await loadVocabulary(settings.modelPath);
  const target = { modelId: "m", vocabulary, ctxSize: 1 << 30 };
  await tokenizeChat(target, conversation(4_000)); // starts the prompt thread (render and tokenizer)
  for (const turns of turnCounts) {
    const request = conversation(turns);
    let t0 = performance.now();
    const oneCall = vocabulary.tokenize(renderChatPrompt(request, vocabulary.template), true).length;
    const before = performance.now() - t0;
    t0 = performance.now();
    const pieces = (await tokenizeChat(target, request)).length;
    const after = performance.now() - t0;
    const row = { turns, tokens: pieces, oneCallTokens: oneCall, beforeMs: Math.round(before), afterMs: Math.round(after), ratio: +(before / after).toFixed(1) };
    results.tokenize.push(row);
    console.log("tokenize", row);
  }
  await dispose();
}

/** Part 2: one enormous request against a real server of `dist`, with the loop and /health watched. */
async function measureServer(side, dist) {
  const { createEngine } = await import(`${dist}engine/index.js`);
  const { createServer } = await import(`${dist}server/app.js`);
  const engine = await createEngine({ models: [{ id: "m", path: settings.modelPath }], parallel: 1, ctxSize: 4096, threads: settings.threads });
  const server = await createServer(engine).listen({ host: "127.0.0.1", port: 0 });
  const cases = [
    ["count_tokens, one 8 MB message", "/v1/messages/count_tokens", { model: "m", messages: [{ role: "user", content: "word ".repeat(1_600_000) }] }],
    ["count_tokens, 10,000 messages", "/v1/messages/count_tokens", { model: "m", messages: conversation(10_000).messages.map((m) => ({ role: m.role, content: m.parts[0].text })) }],
    ["messages (generation), one 8 MB message", "/v1/messages", { model: "m", max_tokens: 4, messages: [{ role: "user", content: "word ".repeat(1_600_000) }] }],
  ];
  await post(`${server.url}/v1/messages/count_tokens`, JSON.stringify(cases[0][2])); // warm-up (prompt thread)
  for (const [name, path, body] of cases) {
    const row = { side, case: name, ...(await watchRequest(server.url, path, JSON.stringify(body))) };
    results.server.push(row);
    console.log("server", row);
  }
  await server.close();
  await engine.close();
}

await measureTokenize();
for (const [side, dist] of sides) await measureServer(side, dist);
const out = new URL(`../results/${new Date().toISOString().slice(0, 10)}-vm-huge-prompts.json`, import.meta.url);
writeFileSync(out, `${JSON.stringify(results, null, 2)}\n`);
console.log(`wrote ${out.pathname}`);
