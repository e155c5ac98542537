import { describe, expect, it } from "vitest";
import { UpstreamEventMapper, readSseData } from "./upstream-events.js";
import { checkEventSequence } from "../../event-invariants.js";
import type { GenerationEvent } from "../../events.js";

function mapAll(chunks: object[], stops: string[] = []): GenerationEvent[] {
  const mapper = new UpstreamEventMapper("m", stops);
  return [...chunks.flatMap((chunk) => mapper.map(chunk)), ...mapper.finish()];
}

describe("UpstreamEventMapper", () => {
  it("maps text chunks and the usage chunk into a well-formed stream", () => {
    const events = mapAll([
      { choices: [{ delta: { role: "assistant", content: "" } }] },
      { choices: [{ delta: { content: "Hel" } }] },
      { choices: [{ delta: { content: "lo" }, finish_reason: "stop" }] },
      { choices: [], usage: { prompt_tokens: 12, completion_tokens: 2, prompt_tokens_details: { cached_tokens: 8 } } },
    ]);
    expect(checkEventSequence(events)).toEqual([]);
    expect(events.filter((e) => e.type === "text-delta").map((e) => (e as { text: string }).text).join("")).toBe("Hello");
    expect(events.at(-1)).toEqual({ type: "finish", reason: "stop", usage: { inputTokens: 12, cachedInputTokens: 8, outputTokens: 2 } });
  });

  it("opens a block per tool call, streams argument fragments and parses the input", () => {
    const events = mapAll([
      { choices: [{ delta: { content: "Let me check." } }] },
      { choices: [{ delta: { tool_calls: [{ index: 0, id: "call_1", function: { name: "get_weather", arguments: "" } }] } }] },
      { choices: [{ delta: { tool_calls: [{ index: 0, function: { arguments: "{\"city\":" } }] } }] },
      { choices: [{ delta: { tool_calls: [{ index: 0, function: { arguments: "\"Paris\"}" } }] } }] },
      { choices: [{ delta: { tool_calls: [{ index: 1, id: "call_2", function: { name: "get_time", arguments: "{}" } }] } }] },
      { choices: [{ delta: {}, finish_reason: "tool_calls" }], usage: { prompt_tokens: 30, completion_tokens: 20 } },
    ]);
    expect(checkEventSequence(events)).toEqual([]);
    expect(events.filter((e) => e.type === "tool-call-end")).toEqual([
      { type: "tool-call-end", index: 1, input: { city: "Paris" } },
      { type: "tool-call-end", index: 2, input: {} },
    ]);
    expect(events.at(-1)).toMatchObject({ type: "finish", reason: "tool-calls" });
  });

  it("reports the matched stop sequence when the upstream names it (vLLM stop_reason)", () => {
    const events = mapAll([{ choices: [{ delta: { content: "a" }, finish_reason: "stop", stop_reason: "END" }] }], ["END"]);
    expect(events.at(-1)).toMatchObject({ type: "finish", reason: "stop-sequence", stopSequence: "END" });
  });

  it("knows the prompt size before the first token when the upstream sends per-chunk usage", () => {
    const events = mapAll([{ choices: [{ delta: { content: "x" }, finish_reason: "length" }], usage: { prompt_tokens: 7, completion_tokens: 1 } }]);
    expect(events[0]).toEqual({ type: "start", model: "m", inputTokens: 7, cachedInputTokens: 0 });
    expect(events.at(-1)).toMatchObject({ reason: "length" });
  });

  it("salvages a call cut off by the upstream's token limit, and finishes with the limit", () => {
    const events = mapAll([
      { choices: [{ delta: { tool_calls: [{ index: 0, id: "c", function: { name: "get_weather", arguments: "{\"city\": \"Par" } }] } }] },
      { choices: [{ delta: {}, finish_reason: "length" }] },
    ]);
    expect(checkEventSequence(events)).toEqual([]);
    expect(events.find((e) => e.type === "tool-call-end")).toEqual({ type: "tool-call-end", index: 0, input: { city: "Par" } });
    expect(events.at(-1)).toMatchObject({ type: "finish", reason: "length" });
  });

  it("refuses a stream that ends without a finish reason and arguments that are not JSON", () => {
    const mapper = new UpstreamEventMapper("m");
    mapper.map({ choices: [{ delta: { content: "x" } }] });
    expect(() => mapper.finish()).toThrow(/without a finish reason/);
    expect(() => mapAll([
      { choices: [{ delta: { tool_calls: [{ index: 0, id: "c", function: { name: "f", arguments: "{oops" } }] } }] },
      { choices: [{ delta: {}, finish_reason: "tool_calls" }] },
    ])).toThrow(/not valid JSON/);
  });
});

describe("readSseData", () => {
  it("yields data payloads across arbitrary chunk splits and stops at [DONE]", async () => {
    const text = 'data: {"a":1}\r\n\n: keep-alive\n\ndata: {"b":2}\n\ndata: [DONE]\n\ndata: {"c":3}\n\n';
    const bytes = new TextEncoder().encode(text);
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < bytes.length; i += 5) controller.enqueue(bytes.slice(i, i + 5));
        controller.close();
      },
    });
    const out: string[] = [];
    for await (const data of readSseData(body)) out.push(data);
    expect(out).toEqual(['{"a":1}', '{"b":2}']);
  });
});
