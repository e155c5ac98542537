/**
 * Counts a large request body's messages and content blocks on a worker thread, so that a body far over the caps
 * (100,000 messages: a second of JSON.parse, validation and translation on a small CPU) is refused without holding
 * the event loop. The worker parses the text and runs {@link countSentInput}; it is started on first use, answers
 * one body at a time and does not keep the process alive.
 */
import { Worker } from "node:worker_threads";
import { countSentInput, type InputCounts } from "./input-limits.js";

/** What the worker answers: the counts, or why the text is no JSON (JSON.parse's message). */
export type BodyCount = InputCounts | { invalid: string };

/** The worker's code, inline (with the counting function's own source) so it runs the same from src/ and dist/. */
const WORKER_SOURCE = `
const { parentPort } = require("node:worker_threads");
const countSentInput = ${countSentInput.toString()};
parentPort.on("message", ({ id, text }) => {
  let body;
  try {
    body = JSON.parse(text);
  } catch (error) {
    parentPort.postMessage({ id, count: { invalid: String(error && error.message ? error.message : error) } });
    return;
  }
  parentPort.postMessage({ id, count: countSentInput(body) });
});
`;

let worker: Worker | undefined;
let nextId = 0;
const pending = new Map<number, (count: BodyCount | undefined) => void>();

/** The body's counts, or undefined when the worker failed (the caller then parses on the loop, as for small bodies). */
export function countBodyOffLoop(text: string): Promise<BodyCount | undefined> {
  const id = nextId++;
  return new Promise((resolve) => {
    pending.set(id, resolve);
    start().postMessage({ id, text });
  });
}

function start(): Worker {
  if (worker) return worker;
  const started = new Worker(WORKER_SOURCE, { eval: true });
  started.unref();
  started.on("message", ({ id, count }: { id: number; count: BodyCount }) => {
    pending.get(id)?.(count);
    pending.delete(id);
  });
  started.on("error", () => stop(started));
  started.on("exit", () => stop(started));
  return (worker = started);
}

/** A dead worker answers nothing: its waiting callers go on without counts, and the next body starts a new one. */
function stop(dead: Worker): void {
  if (worker === dead) worker = undefined;
  for (const resolve of pending.values()) resolve(undefined);
  pending.clear();
}
