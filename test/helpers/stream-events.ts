/** Test helpers for engine streams: gather every event and hold the stream to the event grammar. */
import { expect } from "vitest";
import { checkEventSequence, type GenerationEvent, type ChatRequest } from "../../src/engine/index.js";
import { collectAll } from "./collect.js";

/** Reads a stream to its end and asserts checkEventSequence holds on it. */
export async function readEvents(stream: AsyncIterable<GenerationEvent>): Promise<GenerationEvent[]> {
  const events = await collectAll(stream);
  expect(checkEventSequence(events)).toEqual([]);
  return events;
}

/** The concatenated text of every text block. */
export function textOf(events: GenerationEvent[]): string {
  return events.map((event) => (event.type === "text-delta" ? event.text : "")).join("");
}

export function finishOf(events: GenerationEvent[]): Extract<GenerationEvent, { type: "finish" }> {
  const last = events.at(-1);
  if (last?.type !== "finish") throw new Error(`expected a finish event, got ${JSON.stringify(last)}`);
  return last;
}

export function startOf(events: GenerationEvent[]): Extract<GenerationEvent, { type: "start" }> {
  const first = events[0];
  if (first?.type !== "start") throw new Error(`expected a start event, got ${JSON.stringify(first)}`);
  return first;
}

/** A one-message user request with greedy sampling. */
export function userRequest(model: string, text: string, extra: Partial<ChatRequest> = {}): ChatRequest {
  return { model, messages: [{ role: "user", parts: [{ type: "text", text }] }], maxTokens: 16, sampling: { temperature: 0 }, ...extra };
}

/** Length of the common prefix of two token lists. */
export function sharedPrefixLength(a: readonly number[], b: readonly number[]): number {
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  return i;
}

/** A stream read in the background: `running` resolves at its second text delta; `done` holds all its events. */
export interface BackgroundStream {
  running: Promise<void>;
  tokens(): number;
  done: Promise<GenerationEvent[]>;
}

export function readInBackground(stream: AsyncIterable<GenerationEvent>): BackgroundStream {
  let count = 0;
  let resolveRunning: () => void = () => {};
  const running = new Promise<void>((resolve) => { resolveRunning = resolve; });
  const done = readEvents((async function* () {
    for await (const event of stream) {
      if (event.type === "text-delta" && ++count === 2) resolveRunning();
      yield event;
    }
  })());
  return { running, tokens: () => count, done };
}
