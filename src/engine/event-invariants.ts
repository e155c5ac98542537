/**
 * The one checker of the event grammar, used by every backend and encoder test:
 * exactly one `start`, first; blocks never interleave and their indices rise from 0 without gaps; every block
 * start has one end of the same kind; `finish` or `error` is last and nothing follows it.
 * Returns the list of violations (empty when the sequence is well-formed).
 */
import type { GenerationEvent } from "./events.js";

export function checkEventSequence(events: GenerationEvent[]): string[] {
  const problems: string[] = [];
  let open: { kind: string; index: number } | undefined;
  let nextIndex = 0;
  events.forEach((event, position) => {
    const at = `event ${position} (${event.type})`;
    if (position === 0 && event.type !== "start") problems.push(`${at}: the first event must be start`);
    if (position > 0 && event.type === "start") problems.push(`${at}: start must appear exactly once`);
    const terminal = event.type === "finish" || event.type === "error";
    if (terminal && position !== events.length - 1) problems.push(`${at}: nothing may follow ${event.type}`);
    if (event.type === "finish" && open) problems.push(`${at}: block ${open.index} is still open`);
    if (!("index" in event)) return;
    const [kind, phase] = splitBlockType(event.type);
    if (phase === "start") {
      if (open) problems.push(`${at}: block ${open.index} is still open`);
      if (event.index !== nextIndex) problems.push(`${at}: expected index ${nextIndex}, got ${event.index}`);
      open = { kind, index: event.index };
      nextIndex = event.index + 1;
      return;
    }
    if (!open || open.index !== event.index || open.kind !== kind) {
      problems.push(`${at}: no open ${kind} block with index ${event.index}`);
      return;
    }
    if (phase === "end") open = undefined;
  });
  const last = events.at(-1);
  if (!last || (last.type !== "finish" && last.type !== "error")) problems.push("the sequence must end with finish or error");
  return problems;
}

function splitBlockType(type: string): [string, string] {
  const cut = type.lastIndexOf("-");
  return [type.slice(0, cut), type.slice(cut + 1)];
}
