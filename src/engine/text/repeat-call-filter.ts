/**
 * Ends a reply that starts repeating its own tool calls. Small models fall into loops of the same call: Qwen2.5-Coder
 * 0.5B answered one Claude Code turn with the same Write call until the 4,096-token limit, minutes of CPU time for
 * calls the agent would run again and again. A call after the first is held until complete; an exact repeat of an
 * earlier call of the reply (same tool, same input) is dropped and ends generation, any other call passes whole.
 */
import type { ParsedPiece } from "./tool-call-parser.js";

export class RepeatCallFilter {
  private readonly seen = new Set<string>();
  private held: ParsedPiece[] = [];
  private name = "";
  /** A repeat was found: generation should end. */
  repeated = false;

  filter(pieces: ParsedPiece[]): ParsedPiece[] {
    const out: ParsedPiece[] = [];
    for (const piece of pieces) {
      if (this.repeated) break;
      if (piece.kind === "call-start") this.name = piece.name;
      const holding = this.held.length > 0 || (piece.kind === "call-start" && this.seen.size > 0);
      if (!holding) {
        if (piece.kind === "call-end") this.seen.add(callKey(this.name, piece.input));
        out.push(piece);
        continue;
      }
      this.held.push(piece);
      if (piece.kind !== "call-end") continue;
      const key = callKey(this.name, piece.input);
      if (this.seen.has(key)) this.repeated = true;
      else out.push(...this.held);
      this.seen.add(key);
      this.held = [];
    }
    return out;
  }
}

function callKey(name: string, input: unknown): string {
  return `${name}\u0000${JSON.stringify(input)}`;
}
