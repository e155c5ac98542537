/**
 * One budget of cores for every llama.cpp model of a process. The core share (core-share.ts) counts this process's
 * own CPU time as cores it has, so a model that measured alone would count another model's work — a load's file
 * reading and weight repacking, that model's steps — as its own, and step on every core beside it. Two models each
 * stepping on both of 2 cores, or one stepping on both beside a load, make ggml's threads wait out each other's time
 * slices at every spin barrier: a stream of the default model went 2–3 s without a token while a second model loaded
 * (bench/results/2026-11-26-vm-on-demand.md). So the cores the process gets are split evenly between the works that
 * need them now: each model serving requests and each load in progress, one thread at least each.
 */
import { CoreShare, readCpuTimes, type CpuTimes } from "./core-share.js";

/** A model's part of the budget: the cores its steps may use now (its CoreSplit splits them with its prefill lane). */
export interface ModelCores {
  readonly maxThreads: number;
  threads(): number;
  /** Whether other work of the process shares the cores now (so the process's CPU time is not this model's alone). */
  shared(): boolean;
  /** Ends its load: from now on the model works while `busy()` (it serves requests) says so. */
  loaded(busy: () => boolean): void;
  /** Takes the model out of the budget (a failed load, an unload). */
  leave(): void;
}

export class CoreBudget {
  private readonly share: CoreShare;
  /** Whether each member works now: loading, then serving requests. */
  private readonly members = new Map<ModelCores, () => boolean>();

  constructor(readonly maxThreads: number, read: () => CpuTimes | undefined = readCpuTimes) {
    this.share = new CoreShare(maxThreads, read);
  }

  /** Adds a model as its load starts; the load counts as work until `loaded`. */
  join(): ModelCores {
    const others = () => [...this.members].filter(([member, working]) => member !== cores && working()).length;
    const cores: ModelCores = {
      maxThreads: this.maxThreads,
      threads: () => Math.max(1, Math.floor(this.share.threads() / (1 + others()))),
      shared: () => others() > 0,
      loaded: (busy) => void this.members.set(cores, busy),
      leave: () => void this.members.delete(cores),
    };
    this.members.set(cores, () => true);
    return cores;
  }
}
