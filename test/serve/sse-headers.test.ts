/**
 * A streamed response commits its 200 and headers as soon as the generation starts, before any token: a client
 * (and a proxy) sees the request accepted while a long prompt is still evaluated, even where the stream's first frame
 * waits for the first token (legacy completions send nothing before it). On a loopback port kiln writes the stream
 * straight to the socket (sse.ts), so this checks that path sends the head at once.
 */
import { expect, it } from "vitest";
import { createScriptGate } from "../../src/engine/backends/scripted/script-gate.js";
import { startScriptedEngine } from "../helpers/scripted-engine.js";
import { describeMatrix } from "../helpers/server-matrix.js";
import { TEST_MODEL } from "../helpers/server.js";

const gate = createScriptGate();

describeMatrix("a streamed response's head", { engine: () => startScriptedEngine({ gate }) }, (server) => {
  it("arrives before the first token, and the stream follows once tokens come", async () => {
    gate.hold();
    const response = await server.fetch(`${server.url}/v1/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: TEST_MODEL, max_tokens: 8, stream: true, prompt: "Hi" }),
    });
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toMatch(/^text\/event-stream/);
    expect(response.headers.get("request-id")).toMatch(/^req_/);
    gate.open();
    const body = await response.text();
    expect(body).toMatch(/^data: \{/);
    expect(body.trimEnd().endsWith("data: [DONE]")).toBe(true);
  });
});
