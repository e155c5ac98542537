/**
 * Graceful shutdown of the real `kiln serve` process: a streaming request started before SIGTERM completes in
 * full, new connections are refused while it drains, usage is flushed and the process exits 0.
 */
import { connect } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { runKilnCli, spawnServe, type ServeProcess } from "../helpers/spawn-serve.js";
import { parseSse } from "../helpers/sse.js";

let serve: ServeProcess | undefined;

afterEach(() => {
  if (serve && serve.child.exitCode === null && serve.child.signalCode === null) serve.child.kill("SIGKILL");
  serve = undefined;
});

/** Resolves with the connect error's code, or "connected". */
function tryConnect(url: string): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect(Number(port), hostname);
    socket.once("connect", () => {
      socket.destroy();
      resolve("connected");
    });
    socket.once("error", (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
  });
}

/** Reads an SSE body to its end, calling `onFirstBytes` once when the first chunk arrives. */
async function readStream(response: Response, onFirstBytes: () => void): Promise<string> {
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return text;
    if (text === "") onFirstBytes();
    text += value;
  }
}

describe("kiln serve on SIGTERM", () => {
  it("finishes the in-flight stream, refuses new connections, saves usage and exits 0", async () => {
    serve = await spawnServe(["--model", "smollm2-135m", "--parallel", "1", "--ctx-size", "1024", "--log-level", "error"]);
    const running = serve;
    // The start-up report states where the layers and the KV cache went, the context, and how the CPU runs it.
    expect(running.stderr()).toMatch(/model smollm2-135m \(default\): 31 layers on the CPU, KV cache \d+ MiB in RAM, context 1024 × 1, file 94 MiB, CPU threads \d+ \((persistent pool|fixed|one thread below \d+ tokens)\)/);
    const response = await fetch(`${running.url}/v1/messages`, {
      method: "POST",
      headers: { "content-type": "application/json", "anthropic-version": "2023-06-01" },
      body: JSON.stringify({ model: "smollm2-135m", max_tokens: 48, stream: true, messages: [{ role: "user", content: "Write a long story about a potter and her kiln." }] }),
    });
    expect(response.status).toBe(200);
    const sse = await readStream(response, () => running.child.kill("SIGTERM"));
    // The connection check runs once the server has begun draining (its log line), while it still runs.
    await running.waitForLog(/draining/);

    const events = parseSse(sse);
    expect(events[0]?.event).toBe("message_start");
    expect(events.at(-1)?.event).toBe("message_stop");
    const delta = events.find((e) => e.event === "message_delta")!.json as { usage: { output_tokens: number }; delta: { stop_reason: string } };
    expect(["end_turn", "max_tokens"]).toContain(delta.delta.stop_reason);
    expect(delta.usage.output_tokens).toBeGreaterThan(0);

    expect(await running.exited).toBe(0);
    expect(await tryConnect(running.url)).toBe("ECONNREFUSED");
    expect(running.stderr()).toMatch(/kiln: stopped/);

    const usage = await runKilnCli(running.home, ["usage", "--json"]);
    expect(usage.code, usage.stderr).toBe(0);
    expect(JSON.parse(usage.stdout)).toEqual([
      expect.objectContaining({ keyId: "anonymous", model: "smollm2-135m", requests: 1, outputTokens: delta.usage.output_tokens }),
    ]);
  });

  it("refuses new connections while draining and ends what is left at --drain-timeout", async () => {
    serve = await spawnServe(["--model", "smollm2-135m", "--parallel", "1", "--ctx-size", "1024", "--log-level", "error", "--drain-timeout", "3"]);
    const running = serve;
    const stalled = await startStalledRequest(running.url);
    running.child.kill("SIGTERM");
    await running.waitForLog(/draining/);
    // The stalled request keeps the server draining (not stopped) until the timeout.
    expect(await tryConnect(running.url)).toBe("ECONNREFUSED");
    expect(await running.exited).toBe(0);
    expect(running.stderr()).toMatch(/drain timeout reached/);
    expect(await stalled.closed).toBe(true);
  });

  it("exits at once with 130 on a second signal", async () => {
    serve = await spawnServe(["--model", "smollm2-135m", "--parallel", "1", "--ctx-size", "1024", "--log-level", "error"]);
    const running = serve;
    const stalled = await startStalledRequest(running.url);
    running.child.kill("SIGTERM");
    await running.waitForLog(/draining/);
    running.child.kill("SIGINT");
    expect(await running.exited).toBe(130);
    expect(running.stderr()).not.toMatch(/kiln: stopped/);
    await stalled.closed;
  });
});

/**
 * A request the server has accepted (it answered `100 Continue`) whose body never comes: in flight until the
 * server ends it. `closed` resolves when the server closes the connection.
 */
async function startStalledRequest(url: string): Promise<{ closed: Promise<boolean> }> {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  const closed = new Promise<boolean>((resolve) => socket.once("close", () => resolve(true)));
  socket.on("error", () => undefined);
  await new Promise<void>((resolve, reject) => {
    socket.once("connect", () => {
      socket.write(`POST /v1/messages HTTP/1.1\r\nHost: ${hostname}\r\nContent-Type: application/json\r\nContent-Length: 100\r\nExpect: 100-continue\r\n\r\n`);
    });
    socket.once("data", (chunk: Buffer) => (chunk.toString().startsWith("HTTP/1.1 100") ? resolve() : reject(new Error(chunk.toString()))));
    socket.once("error", reject);
  });
  return { closed };
}
