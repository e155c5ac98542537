/**
 * Turns parsed output pieces into block events with rising indices, so the event grammar
 * (see event-invariants.ts) holds by construction: one block open at a time, every start ended.
 */
import type { GenerationEvent, TokenLogprob } from "../events.js";
import type { ParsedPiece } from "./tool-call-parser.js";
import type { IdFactory } from "../../lib/ids.js";

/** A parsed piece of answer, or a run of reasoning. */
export type OutputPiece = ParsedPiece | { kind: "reasoning"; text: string };
type BlockKind = "text" | "reasoning" | "tool-call";

export class BlockWriter {
  private open?: { kind: BlockKind; index: number };
  private nextIndex = 0;
  private pendingLogprobs: TokenLogprob[] = [];
  /** Tool calls ended, a cut one included. */
  completedCalls = 0;
  /** Whether the output ended inside a call's arguments (what was written is salvaged into its input). */
  cutCall = false;
  /** Whether any block event was written (an abort after this reports "aborted" rather than nothing). */
  wroteAny = false;

  constructor(private readonly ids: IdFactory) {}

  /** Logprobs of tokens whose text is still held back; attached to the next text delta. */
  addLogprobs(logprobs: TokenLogprob[]): void {
    this.pendingLogprobs.push(...logprobs);
  }

  write(pieces: OutputPiece[]): GenerationEvent[] {
    return pieces.flatMap((piece) => this.writePiece(piece));
  }

  /** Ends the open block, if any. */
  close(): GenerationEvent[] {
    if (!this.open) return [];
    const { kind, index } = this.open;
    this.open = undefined;
    if (kind === "tool-call") return [];
    return [kind === "text" ? { type: "text-end", index } : { type: "reasoning-end", index }];
  }

  private writePiece(piece: OutputPiece): GenerationEvent[] {
    switch (piece.kind) {
      case "text": return this.writeText(piece.text);
      case "reasoning": return this.writeReasoning(piece.text);
      case "call-start": {
        const events = this.close();
        const index = this.begin("tool-call");
        events.push({ type: "tool-call-start", index, id: this.ids(""), name: piece.name });
        return events;
      }
      case "call-delta": return this.open?.kind === "tool-call" && piece.json ? [{ type: "tool-call-delta", index: this.open.index, json: piece.json }] : [];
      case "call-end": {
        if (this.open?.kind !== "tool-call") return [];
        const index = this.open.index;
        this.open = undefined;
        this.completedCalls++;
        if (piece.cut) this.cutCall = true;
        return [{ type: "tool-call-end", index, input: piece.input }];
      }
    }
  }

  private writeText(text: string): GenerationEvent[] {
    if (!text) return [];
    const events: GenerationEvent[] = [];
    if (this.open?.kind !== "text") {
      events.push(...this.close());
      events.push({ type: "text-start", index: this.begin("text") });
    }
    const index = this.nextIndex - 1;
    const logprobs = this.takeLogprobs();
    events.push(logprobs ? { type: "text-delta", index, text, logprobs } : { type: "text-delta", index, text });
    return events;
  }

  /** Reasoning carries no logprobs on any surface: those of its tokens are dropped. */
  private writeReasoning(text: string): GenerationEvent[] {
    if (!text) return [];
    this.pendingLogprobs = [];
    const events: GenerationEvent[] = [];
    if (this.open?.kind !== "reasoning") {
      events.push(...this.close());
      events.push({ type: "reasoning-start", index: this.begin("reasoning") });
    }
    events.push({ type: "reasoning-delta", index: this.nextIndex - 1, text });
    return events;
  }

  private begin(kind: BlockKind): number {
    const index = this.nextIndex++;
    this.open = { kind, index };
    this.wroteAny = true;
    return index;
  }

  private takeLogprobs(): TokenLogprob[] | undefined {
    if (this.pendingLogprobs.length === 0) return undefined;
    const taken = this.pendingLogprobs;
    this.pendingLogprobs = [];
    return taken;
  }
}
