/**
 * The text path from decoded tokens to events: stop sequences are cut first (the matched one is reported and never
 * emitted), then a reasoning model's `<think>` blocks are split out, then tool calls are parsed out of the answer
 * when tools are offered (a reply repeating its own call ends there), then pieces become numbered blocks.
 */
import type { GenerationEvent, TokenLogprob } from "../events.js";
import type { IdFactory } from "../../lib/ids.js";
import { StopMatcher } from "./stop-matcher.js";
import type { ToolShape } from "./tool-call-json.js";
import { ToolCallParser, type ParsedPiece } from "./tool-call-parser.js";
import { BlockWriter, type OutputPiece } from "./block-writer.js";
import { ReasoningSplitter } from "./reasoning-splitter.js";
import { RepeatCallFilter } from "./repeat-call-filter.js";

/**
 * Which tools the parser should recognise (names, and parameter names for calls misnamed by the model);
 * `parallel: false` ends generation after the first complete call.
 */
export interface ToolParsing { names: string[]; shapes?: ToolShape[]; parallel: boolean }

/**
 * The model thinks in `<think>` blocks. `insideAtStart`: its prompt opened one; `midThought`: and began the thought
 * too (a prefill), which the output continues as written; `budget`: the tokens a block may take before the output
 * is made to close it with the `close` tokens.
 */
export interface ReasoningParsing { insideAtStart: boolean; midThought?: boolean; budget?: { tokens: number; close: number[] } }

/** What one push produced, and whether generation must end now. */
export interface AssemblerStep { events: GenerationEvent[]; done: boolean }

export class OutputAssembler {
  private readonly stops: StopMatcher;
  private readonly parser?: ToolCallParser;
  private readonly writer: BlockWriter;
  private readonly parallelCalls: boolean;
  private readonly repeats = new RepeatCallFilter();
  private readonly reasoning?: ReasoningSplitter;
  /** The stop sequence that ended generation, once one matched. */
  stopSequence?: string;

  constructor(options: { stop: string[]; tools?: ToolParsing; reasoning?: ReasoningParsing; ids: IdFactory }) {
    this.stops = new StopMatcher(options.stop);
    this.parser = options.tools && new ToolCallParser({ toolNames: options.tools.names, shapes: options.tools.shapes, parallel: options.tools.parallel });
    this.parallelCalls = options.tools?.parallel ?? true;
    this.writer = new BlockWriter(options.ids);
    this.reasoning = options.reasoning && new ReasoningSplitter(options.reasoning.insideAtStart, options.reasoning.midThought);
  }

  get completedCalls(): number { return this.writer.completedCalls; }
  get cutCall(): boolean { return this.writer.cutCall; }
  get wroteAny(): boolean { return this.writer.wroteAny; }
  /** Whether the model is writing a think block now. */
  get thinking(): boolean { return this.reasoning?.inside ?? false; }

  /** Feeds decoded text (and the logprobs of the tokens it came from). */
  push(text: string, logprobs?: TokenLogprob[]): AssemblerStep {
    if (logprobs) this.writer.addLogprobs(logprobs);
    const match = this.stops.push(text);
    const events = this.writer.write(this.split(match.text));
    if (match.stop !== undefined) this.stopSequence = match.stop;
    const doneCalling = (!this.parallelCalls && this.writer.completedCalls > 0) || this.repeats.repeated;
    return { events, done: match.stop !== undefined || doneCalling };
  }

  /** Generation ended: releases held text, finishes parsing and closes the open block. */
  finish(): GenerationEvent[] {
    const rest = this.stopSequence === undefined ? this.stops.flush() : "";
    const pieces = [...this.split(rest, true), ...this.repeats.filter(this.parser?.end() ?? [])];
    const stopAfterFirstCall = !this.parallelCalls && this.writer.completedCalls > 0;
    return [...(stopAfterFirstCall ? [] : this.writer.write(pieces)), ...this.writer.close()];
  }

  /** Reasoning goes straight to the writer; only the answer is parsed for tool calls. `final`: releases held text. */
  private split(text: string, final = false): OutputPiece[] {
    if (!this.reasoning) return this.parse(text);
    const pieces = [...(text ? this.reasoning.push(text) : []), ...(final ? this.reasoning.flush() : [])];
    return pieces.flatMap((piece): OutputPiece[] => (piece.kind === "reasoning" ? [{ kind: "reasoning", text: piece.text }] : this.parse(piece.text)));
  }

  private parse(text: string): ParsedPiece[] {
    if (!text) return [];
    return this.parser ? this.repeats.filter(this.parser.push(text)) : [{ kind: "text", text }];
  }
}
