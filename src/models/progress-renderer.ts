/**
 * Renders pull progress on a stream (stderr): on a terminal, one bar redrawn in place with bytes, rate and ETA;
 * elsewhere (logs, CI), a quiet line every few seconds and at each phase.
 */
import type { PullProgress } from "./pull-progress.js";

/** Receives progress events; `finish` ends the in-place line. */
export interface ProgressRenderer {
  update(progress: PullProgress): void;
  finish(): void;
}

/** Options: whether to draw in place (defaults to the stream's isTTY) and an injectable clock. */
export interface RendererOptions {
  tty?: boolean;
  now?: () => number;
}

const REDRAW_MS = 100;
const LOG_MS = 5_000;
const BAR_WIDTH = 24;
const VERBS: Record<PullProgress["phase"], string> = { download: "downloading", extract: "extracting", copy: "copying", assemble: "assembling", verify: "verifying", done: "pulled" };

/** Creates a renderer writing to `stream`. */
export function createProgressRenderer(stream: NodeJS.WritableStream & { isTTY?: boolean }, options: RendererOptions = {}): ProgressRenderer {
  const tty = options.tty ?? Boolean(stream.isTTY);
  const now = options.now ?? Date.now;
  let phase = "";
  let phaseStart = 0;
  let phaseBytes = 0;
  let lastDraw = 0;
  let drawn = false;

  const endLine = () => {
    if (drawn) stream.write("\n");
    drawn = false;
  };
  return {
    update(progress) {
      const t = now();
      const changed = progress.phase !== phase;
      if (changed) [phase, phaseStart, phaseBytes] = [progress.phase, t, progress.receivedBytes];
      if (progress.message) {
        stream.write(`${tty ? "\r\x1b[2K" : ""}${progress.name}: ${progress.message}\n`);
        drawn = false;
        lastDraw = t;
        return;
      }
      const rate = t > phaseStart ? ((progress.receivedBytes - phaseBytes) * 1000) / (t - phaseStart) : 0;
      const line = describeProgress(progress, rate);
      const complete = progress.totalBytes !== null && progress.receivedBytes >= progress.totalBytes;
      if (tty) {
        if (!changed && !complete && t - lastDraw < REDRAW_MS) return;
        stream.write(`\r\x1b[2K${line}`);
        drawn = true;
      } else {
        if (!changed && !(complete && progress.phase === "done") && t - lastDraw < LOG_MS) return;
        stream.write(`${line}\n`);
      }
      lastDraw = t;
    },
    finish: endLine,
  };
}

/** One line: `downloading name [####....] 12.0 MiB / 93.8 MiB  4.1 MiB/s  ETA 18s` (then `part 2/6` in a multi-part pull). */
export function describeProgress(progress: PullProgress, bytesPerSecond: number): string {
  const verb = VERBS[progress.phase];
  if (progress.phase === "done" || progress.phase === "verify") return `${verb} ${progress.name} (${formatBytes(progress.receivedBytes)})`;
  const total = progress.totalBytes;
  if (total === null || total === 0) return `${verb} ${progress.name} ${formatBytes(progress.receivedBytes)}${formatRate(bytesPerSecond)}`;
  const fraction = Math.min(1, progress.receivedBytes / total);
  const filled = Math.round(fraction * BAR_WIDTH);
  const bar = `[${"#".repeat(filled)}${".".repeat(BAR_WIDTH - filled)}]`;
  const eta = bytesPerSecond > 0 && fraction < 1 ? `  ETA ${formatDuration((total - progress.receivedBytes) / bytesPerSecond)}` : "";
  const part = progress.part ? `  part ${progress.part.index}/${progress.part.count}` : "";
  return `${verb} ${progress.name} ${bar} ${formatBytes(progress.receivedBytes)} / ${formatBytes(total)}${formatRate(bytesPerSecond)}${eta}${part}`;
}

/** Bytes in binary units, e.g. `93.8 MiB`. */
export function formatBytes(bytes: number): string {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let value = bytes;
  let unit = 0;
  for (; value >= 1024 && unit < units.length - 1; unit++) value /= 1024;
  return unit === 0 ? `${value} B` : `${value.toFixed(1)} ${units[unit]}`;
}

function formatRate(bytesPerSecond: number): string {
  return bytesPerSecond > 0 ? `  ${formatBytes(Math.round(bytesPerSecond))}/s` : "";
}

function formatDuration(seconds: number): string {
  const s = Math.ceil(seconds);
  return s < 60 ? `${s}s` : s < 3600 ? `${Math.floor(s / 60)}m${String(s % 60).padStart(2, "0")}s` : `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, "0")}m`;
}
