/**
 * The CPU cores this process is getting, for the number of threads a decode step should use. ggml's worker threads
 * meet at a spin barrier after every operation (hundreds per step). When another process keeps a core busy, one of
 * two threads is often descheduled and the other spins until it runs again, so every barrier can cost a scheduler
 * time slice: on 2 cores under load a one-token step took 3.5 s on two threads and 41 ms on one
 * (bench/results/2026-11-24-vm-core-share.md). So steps run on no more threads than the cores that are idle or
 * already ours, measured over the last half second from /proc/stat and this process's CPU time. After an idle spell
 * of this process the window since the last reading describes the spell, not the present (a server's first long prompt, sent just
 * after another process's busy spell, evaluated its first 512-token chunk on one of 2 quiet cores): then the share is
 * read off the other processes' tasks runnable at that moment. So is it when a model's load ends (restart()). And a
 * core the window says another process used is taken back when no other process's task is runnable at the reading.
 */
import { readdirSync, readFileSync } from "node:fs";

/** Cumulative CPU times at one moment. */
export interface CpuTimes {
  /** Wall clock, ms. */
  wallMs: number;
  /** Machine-wide jiffies: all, and idle (idle + iowait). */
  totalJiffies: number;
  idleJiffies: number;
  /** Cores counted in /proc/stat. */
  cores: number;
  /** This process's user + system CPU time, ms. */
  ownMs: number;
  /** Tasks runnable machine-wide at that moment, the reading one included (procs_running). */
  runnable?: number;
  /** This process's threads running or runnable at that moment, the reading one included (absent: only it). */
  ownRunnable?: number;
}

/** Further readings of the runnable tasks while other processes' tasks seem to take a core (~0.1 ms each). */
const MOMENT_SAMPLES = 4;
/** How often the share is measured again. */
const INTERVAL_MS = 500;
/** A core counts once this much of it is available (so a share of 1.8 cores still runs two threads). */
const ROUND_UP = 0.25;
/**
 * A window longer than this in which this process used less than IDLE_CORES is an idle spell's. A long window in
 * which it worked (a 512-token batch takes seconds) describes that work's share, and is kept: at its end this
 * process's own polling workers still count as runnable.
 */
const SPELL_MS = 2000;
const IDLE_CORES = 0.1;

/** Reads /proc/stat and this process's CPU time; undefined where /proc/stat is missing (not Linux). */
export function readCpuTimes(): CpuTimes | undefined {
  let stat: string;
  try {
    stat = readFileSync("/proc/stat", "utf8");
  } catch {
    return undefined;
  }
  const fields = stat.slice(0, stat.indexOf("\n")).trim().split(/\s+/).slice(1).map(Number);
  if (fields.length < 5 || fields.some((n) => !Number.isFinite(n))) return undefined;
  const usage = process.cpuUsage();
  const running = /^procs_running (\d+)$/m.exec(stat);
  return {
    wallMs: performance.now(),
    totalJiffies: fields.reduce((a, b) => a + b, 0),
    idleJiffies: fields[3] + fields[4],
    cores: stat.match(/^cpu\d+ /gm)?.length ?? 1,
    ownMs: (usage.user + usage.system) / 1000,
    runnable: running ? Number(running[1]) : undefined,
    ownRunnable: countOwnRunnable(),
  };
}

/** This process's threads in state R (running or runnable), from /proc/self/task; undefined where unreadable. */
function countOwnRunnable(): number | undefined {
  try {
    let count = 0;
    for (const task of readdirSync("/proc/self/task")) {
      const stat = readFileSync(`/proc/self/task/${task}/stat`, "utf8");
      if (stat.charAt(stat.lastIndexOf(")") + 2) === "R") count++;
    }
    return count;
  } catch {
    return undefined;
  }
}

/** The threads a step may use given the other processes' tasks runnable at one moment: a core each. */
function threadsForRunnable(now: CpuTimes, maxThreads: number): number | undefined {
  if (now.runnable === undefined) return undefined;
  return Math.min(maxThreads, Math.max(1, now.cores - (now.runnable - Math.max(1, now.ownRunnable ?? 1))));
}

/** The threads a step may use given the cores available (idle or this process's own) between two readings. */
export function threadsForShare(before: CpuTimes, after: CpuTimes, maxThreads: number): number {
  const wall = after.wallMs - before.wallMs;
  const total = after.totalJiffies - before.totalJiffies;
  if (wall <= 0 || total <= 0) return maxThreads;
  const idleCores = (after.cores * (after.idleJiffies - before.idleJiffies)) / total;
  const ownCores = (after.ownMs - before.ownMs) / wall;
  return Math.min(maxThreads, Math.max(1, Math.floor(idleCores + ownCores + ROUND_UP)));
}

/** The cores a model's steps may use: a CoreShare, or a model's part of the process's (core-budget.ts). */
export interface Cores {
  readonly maxThreads: number;
  threads(): number;
  /** Whether other work of the process uses the cores too (its CPU time is then not the model's alone). */
  shared?(): boolean;
}

/** Tracks the threads to use, measuring again at most every INTERVAL_MS when asked. */
export class CoreShare implements Cores {
  private last: CpuTimes | undefined;
  private current: number;

  constructor(readonly maxThreads: number, private readonly read: () => CpuTimes | undefined = readCpuTimes) {
    this.current = maxThreads;
    this.last = read();
  }

  /**
   * Starts a new window now, with the threads of the moment (other processes' runnable tasks). A model's load ends
   * here: the window before it held the load's reads, whose kernel work counts as another process's, so the first
   * prompt after a server started was evaluated on one of 2 quiet cores.
   */
  restart(): void {
    const now = this.read();
    if (!now) return;
    this.current = this.momentThreads(now) ?? this.current;
    this.last = now;
  }

  threads(): number {
    if (!this.last) return this.maxThreads;
    if (performance.now() - this.last.wallMs < INTERVAL_MS) return this.current;
    const now = this.read();
    if (!now) return this.current;
    const wall = now.wallMs - this.last.wallMs;
    const spell = wall > SPELL_MS && now.ownMs - this.last.ownMs < IDLE_CORES * wall;
    const window = threadsForShare(this.last, now, this.maxThreads);
    // Sampled only when it can change the answer: while a step uses every thread, the client woken by its tokens is
    // runnable at most readings, and each sample costs a read of /proc.
    const moment = spell || window < this.maxThreads ? this.momentThreads(now) : undefined;
    // A core another process used in the window but that nothing else wants now (a client that sent its request and
    // waits for it) is taken back: a client's work just before its prompt put that prompt on one of 2 idle cores.
    this.current = moment === undefined ? window : spell ? moment : Math.max(window, moment);
    this.last = now;
    return this.current;
  }

  /**
   * The threads other processes' runnable tasks leave at `now`, read again up to MOMENT_SAMPLES times while they take a
   * core: a reading comes at a step's start, just after this process wrote its tokens, when the client they woke (or
   * one that has just sent its request) is still running for a fraction of a millisecond. One sample was that client
   * often enough to put a server's prompts on one of 2 idle cores (`npm run bench`'s single stream, sides taking turns:
   * kiln's 512-token prompt at 174–212 tok/s in all three rounds against 272–355 for node-llama-cpp in process; with
   * the further samples 326–348 in two rounds of three).
   */
  private momentThreads(now: CpuTimes): number | undefined {
    let threads = threadsForRunnable(now, this.maxThreads);
    for (let i = 0; i < MOMENT_SAMPLES && threads !== undefined && threads < this.maxThreads; i++) {
      const again = this.read();
      if (!again) break;
      threads = Math.max(threads, threadsForRunnable(again, this.maxThreads) ?? threads);
    }
    return threads;
  }
}

/**
 * A lone lane's threads on a contended machine: it grows to every thread once its threads get this share of a core
 * each, and drops back to the process's share when they get less than the other (see CoreSplit).
 */
const LANE_GROW_SHARE = 0.3;
const LANE_KEEP_SHARE = 0.2;

/**
 * The cores of one model (its part of the process's: core-budget.ts) split between its main context and a context
 * beside it — its prefill lane (prefill-lane.ts) or its embedding context (embedding-context.ts) — while both have
 * work: the context beside gets the larger half, since a prompt or an embedding batch gains more from a thread than a
 * decode step does; alone, either gets all of them. Steps of two threads each on 2 cores would wait out each other's
 * time slices at every barrier: a stream beside an embedding batch of 32 texts took 10–52 s instead of 3–4. A lone
 * lane on a contended machine, with no other work in the process, may take every thread: its chunks are whole
 * 512-token batches (prefill-lane.ts), which gain from a thread beyond the process's share while
 * that thread still gets a fair part of a core (an 8k-token prompt with one of 2 cores kept busy: 68.6 tok/s on two
 * threads, 63.4 on one; a 1.2k one with four busy loops, where one thread gets 0.38 of a core: 44 and 41), and lose
 * much on a machine loaded many times over (a 512-token step at a load of 14 on 2 cores: 16.3 s on two threads,
 * 9.7 s on one; bench/results/2026-11-24-vm-contended-lane.md, …-vm-core-share.md). So the lane times the CPU its
 * chunks get, and grows or drops by the share of a core each of its threads got.
 */
export class CoreSplit {
  /** Whether a context beside the main one works: the lane evaluating a prompt, or an embedding batch. */
  besideActive: () => boolean = () => false;
  /**
   * Whether the main context serves requests other than the lane's. Requests, not steps: a lane chunk lasts up to
   * half a second, and one started on every core while a stream was between two steps would share those cores with
   * it for all that time (two threads on one core each wait out the other's time slice at every barrier).
   */
  mainBusy: () => boolean = () => false;
  /** The threads of the lane's latest step, whether it began alone, and the share of a core each got in its latest lone chunk. */
  private laneThreads = 0;
  private laneAlone = false;
  private laneThreadShare: number | undefined;

  constructor(private readonly share: Cores) {}

  mainCores(): number {
    const cores = this.share.threads();
    return this.besideActive() ? Math.max(1, Math.floor(cores / 2)) : cores;
  }

  /** The embedding context's threads: the larger half while the main context serves requests, else all of them. */
  embeddingCores(): number {
    const cores = this.share.threads();
    return this.mainBusy() ? largerHalf(cores) : cores;
  }

  laneCores(): number {
    const cores = this.share.threads();
    this.laneAlone = !this.mainBusy() && !this.share.shared?.();
    this.laneThreads = this.laneAlone ? this.loneLaneThreads(cores) : largerHalf(cores);
    return this.laneThreads;
  }

  /**
   * Records the CPU time of a lane chunk (the process's: a lone lane is all it runs) and the chunk's wall time; a chunk
   * the main context's work (or another model's) overlapped at either end says nothing of the lane's threads.
   */
  recordLaneChunk(cpuMs: number, wallMs: number): void {
    if (!this.laneAlone || this.mainBusy() || this.share.shared?.() || this.laneThreads === 0 || !(wallMs > 0)) return;
    this.laneThreadShare = cpuMs / wallMs / this.laneThreads;
  }

  private loneLaneThreads(cores: number): number {
    const max = this.share.maxThreads;
    if (cores >= max || this.laneThreadShare === undefined) return cores;
    return this.laneThreadShare >= (this.laneThreads >= max ? LANE_KEEP_SHARE : LANE_GROW_SHARE) ? max : cores;
  }
}

/** The part of `cores` a context beside the main one gets while both work (one at least). */
function largerHalf(cores: number): number {
  return Math.max(1, cores - Math.floor(cores / 2));
}
