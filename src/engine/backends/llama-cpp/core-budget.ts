/**
 * One budget of cores for every llama.cpp model of a process. The core share (core-share.ts) counts this process's
 * own CPU time as cores it has, so a model measuring alone counted another model's work (a load, that model's steps)
 * as its own and stepped on every core beside it. Two models each stepping on both of 2 cores make ggml's threads
 * wait out each other's time slices at every spin barrier: while a second model loaded and evaluated its first
 * prompt, one step of a streaming model took 3 s (6 s of CPU) and its stream went 2–3 s without a token
 * (bench/results/2026-11-26-vm-on-demand.md). So the cores the process gets are split evenly between the works that
 * need them now: each model serving requests and each load in progress, one thread at least each.
 */
import { CoreShare, readCpuTimes, type Cores, type CpuTimes } from "./core-share.js";

/** A model's part of the budget: the cores its steps may use now (its CoreSplit splits them with its prefill lane). */
export interface ModelCores extends Required<Cores> {
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
      loaded: (busy) => {
        this.members.set(cores, busy);
        this.share.restart();
      },
      leave: () => void this.members.delete(cores),
    };
    this.members.set(cores, () => true);
    return cores;
  }
}
