/**
 * What the engine wrapper learns about a request (resolved model, real usage, time to first token, and the bodies
 * when they are to be logged), kept by request id until the HTTP core reports the finished response.
 */
import type { Usage } from "../engine/index.js";

/** Facts about one request gathered while it generated. */
export interface RequestNote {
  model?: string;
  usage?: Usage;
  timeToFirstTokenMs?: number;
  /** Only with --log-bodies: the request as the engine saw it, and the generated text. */
  prompt?: unknown;
  output?: string;
}

/** A bound on notes whose response is never reported (a crashed handler must not leak memory). */
const MAX_NOTES = 10_000;

export class RequestNotes {
  private readonly notes = new Map<string, RequestNote>();

  /** Merges facts into the note of a request. */
  update(requestId: string, facts: Partial<RequestNote>): void {
    const note = this.notes.get(requestId);
    if (note) return void Object.assign(note, facts);
    if (this.notes.size >= MAX_NOTES) this.notes.delete(this.notes.keys().next().value!);
    this.notes.set(requestId, { ...facts });
  }

  /** Returns and forgets the note of a finished request. */
  take(requestId: string): RequestNote | undefined {
    const note = this.notes.get(requestId);
    this.notes.delete(requestId);
    return note;
  }
}
