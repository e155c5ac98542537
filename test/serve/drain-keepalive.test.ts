/**
 * ListeningServer.drain on a real loopback server (a socket is the point, so no in-process run): a request
 * arriving on a kept-alive connection after draining began is refused as overloaded in its surface's shape (and
 * that connection closed), while the request in flight on it completes in full. The model is scripted; its one
 * generation is held in flight until the drain has begun.
 */
import { connect, type Socket } from "node:net";
import { expect, it } from "vitest";
import { createScriptGate } from "../../src/engine/backends/scripted/script-gate.js";
import { startScriptedEngine } from "../helpers/scripted-engine.js";
import { describeMatrix } from "../helpers/server-matrix.js";
import { TEST_MODEL } from "../helpers/server.js";

const gate = createScriptGate();
let onRefusal = () => {};
const options = { onResponse: (record: { status: number }) => record.status === 529 && onRefusal() };

function postRequest(host: string, path: string, body: unknown): string {
  const json = JSON.stringify(body);
  return `POST ${path} HTTP/1.1\r\nHost: ${host}\r\nConnection: keep-alive\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(json)}\r\n\r\n${json}`;
}

describeMatrix("draining a listening server", { engine: () => startScriptedEngine({ parallel: 1, gate }), options }, (server) => {
  it("finishes the in-flight stream and answers a new request on the same connection with 529", async () => {
    const { hostname, port } = new URL(server.url);
    gate.hold();
    const socket: Socket = connect(Number(port), hostname);
    let raw = "";
    let onData: () => void = () => undefined;
    socket.setEncoding("utf8").on("data", (chunk: string) => {
      raw += chunk;
      onData();
    });
    const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
    await new Promise<void>((resolve) => socket.once("connect", () => resolve()));
    socket.write(postRequest(hostname, "/v1/messages", {
      model: TEST_MODEL, max_tokens: 48, stream: true, messages: [{ role: "user", content: "Write a long story about a potter and her kiln." }],
    }));
    await new Promise<void>((resolve) => (onData = resolve));

    const drained = server.listening!.drain(30_000);
    const refused = new Promise<void>((resolve) => (onRefusal = resolve));
    socket.write(postRequest(hostname, "/v1/messages", { model: TEST_MODEL, max_tokens: 4, messages: [{ role: "user", content: "hi" }] }));
    // The in-flight reply goes on only once the server has refused the second request.
    await refused;
    gate.open();
    await closed;
    expect(await drained).toEqual({ timedOut: false });

    const second = raw.indexOf("HTTP/1.1 529");
    expect(raw.startsWith("HTTP/1.1 200")).toBe(true);
    expect(second).toBeGreaterThan(0);
    expect(raw.slice(0, second)).toContain("event: message_stop");
    const refusal = raw.slice(second);
    expect(refusal).toMatch(/^connection: close\r$/im);
    expect(refusal).toContain('"type":"overloaded_error"');
    // The port no longer accepts connections.
    const code = await new Promise<string>((resolve) => {
      const probe = connect(Number(port), hostname);
      probe.once("connect", () => (probe.destroy(), resolve("connected")));
      probe.once("error", (error: NodeJS.ErrnoException) => resolve(error.code ?? "error"));
    });
    expect(code).toBe("ECONNREFUSED");
  });
}, ["loopback"]);
