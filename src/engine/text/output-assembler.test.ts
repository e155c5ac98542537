import { describe, expect, it } from "vitest";
import { checkEventSequence } from "../event-invariants.js";
import type { GenerationEvent } from "../events.js";
import { sequentialIds } from "../../lib/ids.js";
import { OutputAssembler } from "./output-assembler.js";

/** Feeds chunks until the assembler says done, then finishes; returns the events and where it stopped. */
function run(assembler: OutputAssembler, chunks: string[]): { events: GenerationEvent[]; consumed: number } {
  const events: GenerationEvent[] = [{ type: "start", model: "m", inputTokens: 1, cachedInputTokens: 0 }];
  let consumed = 0;
  for (const chunk of chunks) {
    consumed++;
    const step = assembler.push(chunk);
    events.push(...step.events);
    if (step.done) break;
  }
  events.push(...assembler.finish(), { type: "finish", reason: "stop", usage: { inputTokens: 1, cachedInputTokens: 0, outputTokens: consumed } });
  expect(checkEventSequence(events)).toEqual([]);
  return { events, consumed };
}

const text = (events: GenerationEvent[]) => events.map((event) => (event.type === "text-delta" ? event.text : "")).join("");

describe("OutputAssembler", () => {
  it("cuts a stop sequence split across chunks and reports it", () => {
    const assembler = new OutputAssembler({ stop: ["END"], ids: sequentialIds() });
    const { events, consumed } = run(assembler, ["Hello E", "N", "D and more", "never read"]);
    expect(text(events)).toBe("Hello ");
    expect(assembler.stopSequence).toBe("END");
    expect(consumed).toBe(3);
  });

  it("releases held-back text when generation ends without a stop", () => {
    const assembler = new OutputAssembler({ stop: ["STOP"], ids: sequentialIds() });
    const { events } = run(assembler, ["almost ST"]);
    expect(text(events)).toBe("almost ST");
    expect(assembler.stopSequence).toBeUndefined();
  });

  it("turns a tool call into a numbered tool-call block after the text", () => {
    const assembler = new OutputAssembler({ stop: [], tools: { names: ["get_weather"], parallel: true }, ids: sequentialIds() });
    const { events } = run(assembler, ["Let me check. <tool_call>", '{"name": "get_weather", "arguments": {"city":', ' "Paris"}}</tool_call>']);
    const start = events.find((event) => event.type === "tool-call-start");
    expect(start).toMatchObject({ name: "get_weather", id: "0001" }); // engine ids are bare: each surface adds its own prefix
    expect(events.find((event) => event.type === "tool-call-end")).toMatchObject({ input: { city: "Paris" } });
    expect(assembler.completedCalls).toBe(1);
  });

  it("ends after the first call when parallel calls are off", () => {
    const assembler = new OutputAssembler({ stop: [], tools: { names: ["a", "b"], parallel: false }, ids: sequentialIds() });
    const { events, consumed } = run(assembler, ['<tool_call>{"name": "a", "arguments": {}}</tool_call>', '<tool_call>{"name": "b", "arguments": {}}</tool_call>']);
    expect(consumed).toBe(1);
    expect(events.filter((event) => event.type === "tool-call-start")).toHaveLength(1);
  });

  it("ends a reply that repeats one of its calls, dropping the repeat, and passes distinct calls whole", () => {
    const assembler = new OutputAssembler({ stop: [], tools: { names: ["Write", "Read"], parallel: true }, ids: sequentialIds() });
    const write = '<tool_call>{"name": "Write", "arguments": {"file_path": "/a.py", "content": "x"}}</tool_call>';
    const read = '<tool_call>{"name": "Read", "arguments": {"file_path": "/a.py"}}</tool_call>';
    const { events, consumed } = run(assembler, [write, "\n", read, "\n", write, "\n", "never read"]);
    expect(consumed).toBe(5);
    expect(events.filter((event) => event.type === "tool-call-start").map((event) => "name" in event && event.name)).toEqual(["Write", "Read"]);
    expect(assembler.completedCalls).toBe(2);
  });

  it("keeps calls of one tool with different inputs", () => {
    const assembler = new OutputAssembler({ stop: [], tools: { names: ["Read"], parallel: true }, ids: sequentialIds() });
    const read = (file: string) => `<tool_call>{"name": "Read", "arguments": {"file_path": "${file}"}}</tool_call>`;
    const { consumed } = run(assembler, [read("/a.py"), read("/b.py"), read("/c.py")]);
    expect(consumed).toBe(3);
    expect(assembler.completedCalls).toBe(3);
  });

  it("attaches pending logprobs to the next text delta", () => {
    const assembler = new OutputAssembler({ stop: [], ids: sequentialIds() });
    const logprob = { token: "Hi", logprob: -0.1, top: [] };
    const step = assembler.push("Hi", [logprob]);
    expect(step.events.find((event) => event.type === "text-delta")).toMatchObject({ text: "Hi", logprobs: [logprob] });
  });

  it("splits a reasoning block out before the answer and parses tool calls only in the answer", () => {
    const assembler = new OutputAssembler({ stop: [], tools: { names: ["Read"], parallel: true }, reasoning: { insideAtStart: true }, ids: sequentialIds() });
    const thought = 'I could write <tool_call>{"name": "Read", "arguments": {"file_path": "/x"}}</tool_call> later';
    const { events } = run(assembler, [thought, "\n</th", "ink>\n\n", 'Reading. <tool_call>{"name": "Read", "arguments": {"file_path": "/a.py"}}</tool_call>']);
    expect(events.map((event) => event.type)).toEqual([
      "start", "reasoning-start", "reasoning-delta", "reasoning-end", "text-start", "text-delta", "text-end",
      "tool-call-start", "tool-call-delta", "tool-call-end", "finish",
    ]);
    expect(events.find((event) => event.type === "reasoning-delta")).toMatchObject({ text: thought });
    expect(events.find((event) => event.type === "tool-call-end")).toMatchObject({ input: { file_path: "/a.py" } });
  });

  it("ends a reasoning block left open by the end of the output", () => {
    const assembler = new OutputAssembler({ stop: [], reasoning: { insideAtStart: false }, ids: sequentialIds() });
    const { events } = run(assembler, ["<think>", "Hmm, ", "let me"]);
    expect(events.filter((event) => event.type.startsWith("reasoning")).map((event) => event.type)).toEqual(["reasoning-start", "reasoning-delta", "reasoning-delta", "reasoning-end"]);
    expect(text(events)).toBe("");
  });
});
