/**
 * A second context of the same model in which a long prompt is evaluated beside the main context's generating
 * sequences, each on its own share of the cores, instead of in chunks inside their decode steps. A decode step reads
 * every cell of each sequence in it: on Qwen2.5-Coder-0.5B with 2 threads one token costs 19 ms at depth 0 and 73 ms
 * at depth 16k (llama-bench), so any step that advances a 16k prompt holds a running stream for four of its own steps
 * however small the chunk. On separate contexts and one thread each, the stream keeps 1 of 2 cores (its tokens then
 * take about 1.6× as long) and the prompt the other (bench/results/2026-11-24-vm-long-prompts-coder-lane-itl16k.md).
 * The evaluated state then moves into the request's slot of the main context through a state file
 * (state-streams.ts), a small cost beside the prompt's evaluation. The context holds a whole sequence's KV cells (830
 * MB more for Qwen2.5-Coder-1.5B at 32k tokens, and 3 s to create; 0.5 s for the 0.5B at 20k), so it is created at the
 * first long prompt, which then waits for it, unless a server warms it at load with memory to spare
 * (llama-cpp-model.ts).
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { LlamaContext, LlamaContextSequence, LlamaModel, Token } from "node-llama-cpp";
import type { CoreSplit } from "./core-share.js";
import { MAX_STEP_TOKENS } from "./step-planner.js";
import { restreamStateFile, type StreamPlace } from "./state-streams.js";
import { sequenceIdOf, type StepInterrupter } from "./step-interrupter.js";

/**
 * The lane evaluates whole batches (node-llama-cpp's batch size). Smaller ones cost prompt speed, the more so deep in
 * a prompt and on a contended machine (an 8k-token prompt: 120 against 110 tok/s quiet, with 128–256-token chunks
 * sized to half a second; 63.4 against 59.7 with one of 2 cores busy, on one thread), and chunks sized to follow the
 * split of the cores bought nothing measurable: with 512-token chunks a stream's ITL p95 during another's
 * 15,892-token prompt was 1.36× its own (1.13–1.8× in earlier runs with half-second chunks), and streams started meanwhile got their
 * first token within 73 ms (bench/results/2026-11-24-vm-contended-lane.md, …-coder-lane-512-itl16k.md). A client
 * that leaves mid-chunk stops it at once (step-interrupter.ts).
 */
const LANE_CHUNK_TOKENS = MAX_STEP_TOKENS;

/** Uncached prompt tokens from which a prompt is evaluated in the lane (below, the two transfers cost more than it saves). */
export const LANE_MIN_TOKENS = 1024;

export interface PrefillLaneParts {
  context: LlamaContext;
  /** The main context's sequence count (its KV stream count). */
  mainStreams: number;
  steps?: StepInterrupter;
  /** The split of the cores that picks the lane's threads (core-share.ts). */
  cores?: Pick<CoreSplit, "recordLaneChunk">;
  /** Frees what was attached to the context (its thread pool), after it is disposed. */
  release?: () => void;
}

/** The lane once opened: its context's parts, its one sequence, and the folder its state files pass through. */
interface OpenLane {
  parts: PrefillLaneParts;
  sequence: LlamaContextSequence;
  folder: string;
}

export class PrefillLane {
  private busy = false;
  private transfers = 0;
  /** Opened at warm-up or the first long prompt; null once opening failed (memory), which ends the lane for good. */
  private opening?: Promise<OpenLane | null>;
  private warming?: Promise<void>;

  /** `open` creates the lane's context; undefined when it cannot be had. */
  constructor(private readonly open: () => Promise<PrefillLaneParts | undefined>) {}

  /** Whether a prompt is being evaluated here (the main context's steps then leave it cores). */
  get active(): boolean {
    return this.busy;
  }

  /** Opens the lane's context in the background, if `roomy` says so, rather than at the first long prompt. */
  warmUp(roomy: () => Promise<boolean>): void {
    this.warming ??= roomy().then(async (yes) => { if (yes) await this.opened(); }, () => undefined);
  }

  /** The lane, opened once; never rejects (a lane that cannot be had is null). */
  private opened(): Promise<OpenLane | null> {
    this.opening ??= this.openLane();
    return this.opening;
  }

  private async openLane(): Promise<OpenLane | null> {
    const parts = await this.open().catch(() => undefined);
    if (!parts) return null;
    try {
      return { parts, sequence: parts.context.getSequence(), folder: await mkdtemp(join(tmpdir(), "kiln-lane-")) };
    } catch {
      await parts.context.dispose();
      parts.release?.();
      return null;
    }
  }

  /**
   * Evaluates `prompt` from what `target` (a main-context sequence holding a prefix of it) already holds to all but
   * its last token, and moves the result into `target`. Returns how many of the prompt's tokens `target` then holds
   * (fewer when `signal` aborts: what was evaluated is kept), or undefined when the lane is taken by another prompt.
   * A failure in the lane leaves `target` as it was; one while loading `target` leaves it empty.
   */
  async prefill(target: LlamaContextSequence, prompt: readonly Token[], signal: AbortSignal, onFirstChunk: () => void): Promise<number | undefined> {
    if (this.busy) return undefined;
    this.busy = true;
    let interruptible = false;
    let lane: OpenLane | null = null;
    const interrupt = () => { if (interruptible && lane) lane.parts.steps?.abandon(lane.sequence); };
    signal.addEventListener("abort", interrupt);
    try {
      lane = await this.opened();
      if (!lane) return undefined;
      const held = target.nextTokenIndex;
      if (!(await this.take(lane, target, held))) return held;
      const end = prompt.length - 1;
      try {
        for (let done = held; done < end && !(done > held && signal.aborted);) {
          const size = Math.min(LANE_CHUNK_TOKENS, end - done);
          const started = performance.now();
          const cpu = process.cpuUsage();
          await lane.sequence.evaluateWithoutGeneratingNewTokens(prompt.slice(done, done + size) as Token[]);
          const ms = performance.now() - started;
          const used = process.cpuUsage(cpu);
          lane.parts.cores?.recordLaneChunk((used.user + used.system) / 1000, ms);
          if (done === held) {
            interruptible = true;
            onFirstChunk();
            if (signal.aborted) interrupt();
          }
          done += size;
        }
      } catch (error) {
        // A step stopped for the abort keeps what came before it; any other failure leaves the target untouched.
        if (!signal.aborted) return held;
      }
      if (lane.sequence.nextTokenIndex <= held) return held;
      return await this.give(lane, target);
    } finally {
      signal.removeEventListener("abort", interrupt);
      if (lane) lane.parts.steps?.forget(lane.sequence);
      this.busy = false;
    }
  }

  /** Starts the lane's sequence from `target`'s first `held` tokens; false when they cannot be copied. */
  private async take(lane: OpenLane, target: LlamaContextSequence, held: number): Promise<boolean> {
    await lane.sequence.clearHistory();
    if (held === 0) return true;
    try {
      await this.move(lane, target, { streams: lane.parts.mainStreams, index: streamOf(target) }, lane.sequence, 1);
      return lane.sequence.nextTokenIndex === held;
    } catch {
      await lane.sequence.clearHistory();
      return false;
    }
  }

  /** Moves the lane's state into `target`; returns the tokens `target` then holds (0 when the load failed). */
  private async give(lane: OpenLane, target: LlamaContextSequence): Promise<number> {
    const expected = lane.sequence.nextTokenIndex;
    try {
      await this.move(lane, lane.sequence, { streams: 1, index: 0 }, target, lane.parts.mainStreams);
    } catch {
      // The target kept what it held if the failure came before its load; a failed load leaves it empty.
    }
    if (target.nextTokenIndex !== expected && target.nextTokenIndex > 0) {
      await target.eraseContextTokenRanges([{ start: 0, end: target.nextTokenIndex }]);
    }
    return target.nextTokenIndex;
  }

  /** Moves `source`'s state into `target`, a sequence of a context with `streams` streams. */
  private async move(lane: OpenLane, source: LlamaContextSequence, from: StreamPlace, target: LlamaContextSequence, streams: number): Promise<void> {
    const path = join(lane.folder, `${this.transfers++}.state`);
    try {
      await source.saveStateToFile(path);
      await restreamStateFile(path, from, streams);
      await target.loadStateFromFile(path, { acceptRisk: true });
    } finally {
      await rm(path, { force: true });
    }
  }

  async dispose(): Promise<void> {
    await this.warming;
    const lane = await this.opening;
    this.opening = Promise.resolve(null);
    if (!lane) return;
    await lane.parts.context.dispose();
    lane.parts.release?.();
    await rm(lane.folder, { recursive: true, force: true });
  }
}

/** Whether a model's state moves between contexts as restreamStateFile expects (one plain KV cache). */
export function laneSupports(model: LlamaModel): boolean {
  const insights = model.fileInsights;
  return !insights.swaSize && !insights.isRecurrent && !insights.isHybrid && !insights.hasEncoder;
}

/** A sequence's KV stream in node-llama-cpp's layout (one per sequence): its id. */
function streamOf(sequence: LlamaContextSequence): number {
  const id = sequenceIdOf(sequence);
  if (id === undefined) throw new Error("the sequence's id is not readable");
  return id;
}
