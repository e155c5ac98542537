/**
 * Heartbeats while a prompt is evaluated (the scripted model holds its generation after its start event, as a long
 * prompt evaluation would): a chat completion stream sends a chunk with an empty delta, which the openai SDK hands
 * over as a chunk (so an agent timing the gaps between chunks, such as Qwen Code, sees the stream alive; a comment
 * line, which the SDKs drop, would not reach it), and the stream stays well-formed; Messages streams send `ping`
 * events. A heartbeat comes after 10 s of silence, so each case waits that long.
 */
import OpenAI from "openai";
import { expect, it } from "vitest";
import { createScriptGate } from "../../src/engine/backends/scripted/script-gate.js";
import { checkChatCompletionStream } from "../helpers/openai-stream.js";
import { startScriptedEngine } from "../helpers/scripted-engine.js";
import { describeMatrix } from "../helpers/server-matrix.js";
import { TEST_MODEL } from "../helpers/server.js";

const gate = createScriptGate();
const ask = [{ role: "user" as const, content: "Say hello." }];

describeMatrix("heartbeats during prompt evaluation", { engine: () => startScriptedEngine({ recording: ["openai", "chat-text"], gate }) }, (server) => {
  it("a chat completion stream sends empty deltas the openai SDK hands over, then the reply, well-formed", { timeout: 60_000 }, async () => {
    const recorded: string[] = [];
    const recordingFetch: typeof fetch = async (input, init) => {
      const response = await server.fetch(input as string, init);
      const [mine, theirs] = response.body!.tee();
      void new Response(mine).text().then((text) => recorded.push(text));
      return new Response(theirs, response);
    };
    const client = new OpenAI({ apiKey: "unused", baseURL: `${server.url}/v1`, maxRetries: 0, fetch: recordingFetch });
    gate.hold();
    const stream = await client.chat.completions.create({ model: TEST_MODEL, messages: ask, max_tokens: 8, stream: true });
    const deltas: Array<Record<string, unknown>> = [];
    let text = "";
    for await (const chunk of stream) {
      const choice = chunk.choices[0]!;
      deltas.push({ ...choice.delta });
      text += choice.delta.content ?? "";
      // The first chunk after the role chunk, while the generation is held, can only be a heartbeat.
      if (deltas.length === 2) gate.open();
    }
    expect(deltas[0]).toMatchObject({ role: "assistant" });
    expect(deltas[1]).toEqual({});
    expect(text.length).toBeGreaterThan(0);
    await expect.poll(() => recorded.length).toBe(1);
    expect(checkChatCompletionStream(recorded[0]!)).toEqual([]);
  });

  it("a Messages stream sends ping events", { timeout: 60_000 }, async () => {
    gate.hold();
    const response = await server.fetch(`${server.url}/v1/messages`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: TEST_MODEL, max_tokens: 8, messages: ask, stream: true }),
    });
    const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
    let raw = "";
    while (!raw.includes("event: ping")) raw += (await reader.read()).value ?? "";
    gate.open();
    for (let next = await reader.read(); !next.done; next = await reader.read()) raw += next.value;
    expect(raw.indexOf("event: message_start")).toBeLessThan(raw.indexOf("event: ping"));
    expect(raw).toContain("event: message_stop");
  });
}, ["loopback"]);
