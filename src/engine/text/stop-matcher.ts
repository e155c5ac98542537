/**
 * Streaming stop-sequence matcher: text goes in as it is generated, and only text that cannot be the start of a
 * stop sequence comes out, so a stop string split across tokens never reaches the client.
 */

/** What `push` lets through: the text safe to emit and, once a stop sequence completed, which one. */
export interface StopMatch {
  /** Text safe to emit now (before the stop sequence, when one matched). */
  text: string;
  /** The stop sequence that completed; generation should end. */
  stop?: string;
}

/** Holds back any suffix that could begin a stop string; reports the first stop string that completes. */
export class StopMatcher {
  private readonly stops: string[];
  private held = "";
  private stopped = false;

  constructor(stops: string[]) {
    this.stops = [...new Set(stops.filter((stop) => stop.length > 0))];
  }

  /** Feeds generated text; returns what can be emitted. After a stop matched, further text is ignored. */
  push(text: string): StopMatch {
    if (this.stopped) return { text: "" };
    const buffer = this.held + text;
    const match = findFirstStop(buffer, this.stops);
    if (match) {
      this.stopped = true;
      this.held = "";
      return { text: buffer.slice(0, match.start), stop: match.stop };
    }
    const keep = longestPartialStop(buffer, this.stops);
    this.held = buffer.slice(buffer.length - keep);
    return { text: buffer.slice(0, buffer.length - keep) };
  }

  /** Generation ended without a stop: returns the held-back text. */
  flush(): string {
    const rest = this.stopped ? "" : this.held;
    this.held = "";
    return rest;
  }
}

/**
 * The stop that completes first as text streams in: the smallest end index, then the longest (it started first).
 * This gives the same answer however the text was split into chunks.
 */
function findFirstStop(buffer: string, stops: string[]): { start: number; stop: string } | undefined {
  let best: { start: number; end: number; stop: string } | undefined;
  for (const stop of stops) {
    const start = buffer.indexOf(stop);
    if (start < 0) continue;
    const end = start + stop.length;
    if (!best || end < best.end || (end === best.end && start < best.start)) best = { start, end, stop };
  }
  return best && { start: best.start, stop: best.stop };
}

/** Length of the longest suffix of `buffer` that is a proper prefix of some stop string. */
function longestPartialStop(buffer: string, stops: string[]): number {
  let longest = 0;
  for (const stop of stops) {
    for (let length = Math.min(stop.length - 1, buffer.length); length > longest; length--) {
      if (buffer.endsWith(stop.slice(0, length))) {
        longest = length;
        break;
      }
    }
  }
  return longest;
}
