/**
 * A request whose client leaves before its response is complete is recorded (request log, metrics, usage) as 499
 * with an `aborted` failure, not as the status the response would have had. A real loopback server (a socket that
 * closes is the point) on the scripted model, held after its start event until the client has gone; the streamed
 * case with the real model is in disconnect-usage.test.ts.
 */
import { expect, it } from "vitest";
import type { Engine } from "../../src/engine/index.js";
import { createScriptGate } from "../../src/engine/backends/scripted/script-gate.js";
import type { ResponseRecord } from "../../src/server/context.js";
import { startScriptedEngine } from "../helpers/scripted-engine.js";
import { describeMatrix } from "../helpers/server-matrix.js";
import { TEST_MODEL } from "../helpers/server.js";

const gate = createScriptGate();
const records: ResponseRecord[] = [];
let generationStarted = () => {};

/** The scripted engine, telling the test when a generation has sent its start event. */
async function observedEngine(): Promise<Engine> {
  const engine = await startScriptedEngine({ gate });
  return {
    ...engine,
    generate: (request, options) => (async function* () {
      for await (const event of engine.generate(request, options)) {
        yield event;
        if (event.type === "start") generationStarted();
      }
    })(),
  };
}

describeMatrix("a client that leaves", { engine: observedEngine, options: { onResponse: (record) => records.push({ ...record }) } }, (server) => {
  it("before a non-streamed reply is complete is recorded as 499 aborted", async () => {
    gate.hold();
    const started = new Promise<void>((resolve) => (generationStarted = resolve));
    const controller = new AbortController();
    const request = server.fetch(`${server.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: TEST_MODEL, max_tokens: 8, messages: [{ role: "user", content: "Hi" }] }),
      signal: controller.signal,
    }).catch((error: unknown) => error);
    await started;
    controller.abort();
    await request;
    await expect.poll(() => records.length).toBe(1);
    gate.open();
    expect(records[0]).toMatchObject({ status: 499, error: expect.stringMatching(/^aborted: /), stream: false });
  });
}, ["loopback"]);
