/**
 * The one object that decides which models are in memory: it loads a model on the first request that needs it
 * (the others keep serving), lets requests that arrive meanwhile wait for that load (bounded by the queue and a
 * timeout), remembers a failed load for a while instead of retrying it on every request, unloads a model its
 * keep-alive after its last request, and keeps what is loaded within a count and a memory budget by unloading the
 * least recently used idle models first. A model held by a request is never unloaded.
 */
import { EngineError, toEngineError } from "../../errors/engine-error.js";
import { Scheduler } from "../scheduler.js";
import { waitBounded, Wakeup } from "./bounded-wait.js";
import { Resident, type Loaded, type ResidentSource } from "./resident.js";
import { findRoom, type RoomLimits } from "./room.js";

export interface ResidencyOptions extends RoomLimits {
  /** Requests that may wait per model, for its load or on its scheduler. */
  queue: number;
  /** Default time a model stays after its last request: ms, 0 at once, negative never. */
  keepAliveMs: number;
  /** How long a request waits for its model's load, or for room to load it, before the overloaded error. */
  loadTimeoutMs: number;
  /** How long a failed load is answered from memory before it is tried again. */
  failureMemoryMs: number;
  /** Finds a model not seen yet by name (on-demand models); undefined: none. */
  discover?(name: string): ResidentSource | undefined;
  /** Every on-demand model offered now, for listing. */
  offered?(): ResidentSource[];
  onModelLoad?(model: string, milliseconds: number): void;
  warn?(message: string): void;
}

/** A request's hold on a loaded model; `release` exactly once, with the request's keep-alive when it gave one. */
export interface Lease extends Loaded { release(keepAliveMs?: number): void }

const RETRY_AFTER_SECONDS = 5;

export class ModelResidency {
  private readonly residents: Resident[] = [];
  private readonly changed = new Wakeup();
  private closed = false;
  /** Uses so far, ranking the models for least-recently-used eviction. */
  private uses = 0;

  constructor(private readonly options: ResidencyOptions) {}

  /**
   * Adds a model and loads it now (a failure throws). Models named at start load whatever the limits say, as the
   * operator asked for them; they count against the limits for the models loaded on demand.
   */
  async preload(source: ResidentSource): Promise<void> {
    const resident = this.register(source);
    this.startLoad(resident);
    if (resident.state.kind === "loading") await resident.state.done;
    // At start the load's own error is the answer, as it was before models loaded on demand.
    if (resident.failure) throw resident.failure.cause;
    this.scheduleUnload(resident);
  }

  /** The model a name means, discovering on-demand models as they are named. */
  find(name: string): Resident | undefined {
    const known = this.residents.find((resident) => resident.answersTo(name));
    if (known) return known;
    const source = this.options.discover?.(name);
    if (!source) return undefined;
    return this.register(source);
  }

  /** Every model it can serve: those known so far in the order they became known, then the others offered. */
  list(): readonly Resident[] {
    for (const source of this.options.offered?.() ?? []) {
      if (!this.residents.some((resident) => resident.answersTo(source.info.id))) this.register(source);
    }
    return this.residents;
  }

  /** The models loaded now. */
  loadedModels(): Loaded[] {
    return this.residents.flatMap((resident) => resident.loaded ?? []);
  }

  private register(source: ResidentSource): Resident {
    const resident = new Resident(source, this.options.keepAliveMs);
    this.residents.push(resident);
    return resident;
  }

  /**
   * Holds the named model loaded for one request, loading it (and making room for it) first when needed. A loaded
   * model is held at once, not a promise later, so a request joins its model's queue in the tick it arrives.
   */
  acquire(name: string, signal?: AbortSignal): Lease | Promise<Lease> {
    const resident = this.find(name);
    if (!resident) throw new EngineError("not_found", `model: ${name}`, { param: "model" });
    this.throwRememberedFailure(resident);
    if (!resident.loaded && resident.waitingForLoad >= this.options.queue) {
      throw new EngineError("overloaded", `model ${resident.id} is loading and ${resident.waitingForLoad} requests already wait for it; retry later`, { retryAfter: RETRY_AFTER_SECONDS });
    }
    resident.users += 1;
    resident.stopTimer();
    const loaded = resident.loaded;
    if (loaded) return this.lease(resident, loaded);
    return this.waitForLoad(resident, signal).then((ready) => this.lease(resident, ready), (error: unknown) => {
      this.release(resident);
      throw error;
    });
  }

  private lease(resident: Resident, loaded: Loaded): Lease {
    let released = false;
    return { ...loaded, release: (keepAliveMs) => { if (!released) { released = true; this.release(resident, keepAliveMs); } } };
  }

  /** Unloads every model and refuses what still waits. */
  async close(): Promise<void> {
    this.closed = true;
    this.changed.wake();
    await Promise.all(this.residents.map(async (resident) => {
      resident.stopTimer();
      if (resident.state.kind === "loading" || resident.state.kind === "unloading") await resident.state.done;
      const loaded = resident.loaded;
      if (!loaded) return;
      loaded.scheduler.close();
      resident.state = { kind: "unloaded" };
      await loaded.model.dispose();
    }));
  }

  private async waitForLoad(resident: Resident, signal: AbortSignal | undefined): Promise<Loaded> {
    const deadline = Date.now() + this.options.loadTimeoutMs;
    resident.waitingForLoad += 1;
    try {
      for (;;) {
        if (this.closed) throw new EngineError("overloaded", "The engine is shutting down", { retryAfter: 1 });
        const state = resident.state;
        if (state.kind === "loaded") return state.loaded;
        if (state.kind !== "unloaded") {
          await waitBounded(state.done, deadline, signal, () => this.timedOut(resident, "is still loading"));
          // The load this request waited for failed: that is its answer, however briefly failures are remembered.
          if (state.kind === "loading" && resident.failure) throw resident.failure.error;
          continue;
        }
        this.throwRememberedFailure(resident);
        const room = findRoom(this.residents.filter((r) => r.occupies && r !== resident), resident.bytes, this.options);
        if (room.kind === "never") throw this.tooLarge(resident);
        if (room.kind === "fits") this.startLoad(resident);
        else if (room.kind === "evict") await Promise.all(room.victims.map((victim) => this.unload(victim)));
        else await waitBounded(this.changed.next(), deadline, signal, () => this.timedOut(resident, "cannot load: every loaded model is busy"));
      }
    } finally {
      resident.waitingForLoad -= 1;
    }
  }

  private startLoad(resident: Resident): void {
    const started = performance.now();
    const done = resident.source.load().then(
      (model) => {
        const bytes = model.memory ?? resident.source.estimatedBytes;
        resident.loadedAs({ model, scheduler: new Scheduler({ model: model.info.id, parallel: model.parallel, queue: this.options.queue }), bytes });
        resident.used(++this.uses);
        this.options.onModelLoad?.(model.info.id, performance.now() - started);
      },
      (error: unknown) => {
        resident.state = { kind: "unloaded" };
        const cause = toEngineError(error, "backend_failure");
        const message = `model ${resident.id} failed to load: ${cause.message}`;
        resident.failure = { error: new EngineError(cause.code, message, { ...cause.details }, { cause }), cause, until: Date.now() + this.options.failureMemoryMs };
        this.options.warn?.(message);
      },
    ).finally(() => this.changed.wake());
    resident.state = { kind: "loading", done };
  }

  private release(resident: Resident, keepAliveMs?: number): void {
    resident.users -= 1;
    if (keepAliveMs !== undefined) resident.keepAliveMs = keepAliveMs;
    if (resident.users > 0) return;
    resident.used(++this.uses);
    this.scheduleUnload(resident);
    this.changed.wake();
  }

  /** After the last request: unload now (keep-alive 0), at the keep-alive, or never (pinned, negative keep-alive). */
  private scheduleUnload(resident: Resident): void {
    if (!resident.loaded || resident.source.pinned || resident.keepAliveMs < 0 || this.closed) return;
    if (resident.keepAliveMs === 0) {
      void this.unload(resident);
      return;
    }
    resident.unloadAt = Date.now() + resident.keepAliveMs;
    resident.timer = setTimeout(() => void this.unload(resident), resident.keepAliveMs);
    // An idle timer must not keep a process alive on its own.
    resident.timer.unref();
  }

  /** Unloads an idle model; one that a request holds again by then stays. */
  private async unload(resident: Resident): Promise<void> {
    const loaded = resident.loaded;
    if (!loaded || resident.users > 0) return;
    resident.stopTimer();
    loaded.scheduler.close();
    const done = loaded.model.dispose().catch((error: unknown) => {
      this.options.warn?.(`model ${resident.id} did not unload cleanly: ${toEngineError(error).message}`);
    }).finally(() => {
      resident.state = { kind: "unloaded" };
      this.changed.wake();
    });
    resident.state = { kind: "unloading", done };
    await done;
  }

  private throwRememberedFailure(resident: Resident): void {
    const failure = resident.failure;
    if (failure && Date.now() < failure.until) throw failure.error;
  }

  private timedOut(resident: Resident, why: string): EngineError {
    const seconds = Math.round(this.options.loadTimeoutMs / 1000);
    return new EngineError("overloaded", `model ${resident.id} ${why} after ${seconds}s; retry later`, { retryAfter: RETRY_AFTER_SECONDS });
  }

  private tooLarge(resident: Resident): EngineError {
    const mib = (bytes: number) => `${Math.round(bytes / 1024 ** 2)} MiB`;
    return new EngineError("backend_failure", `model ${resident.id} needs about ${mib(resident.bytes)}, more than the memory budget of ${mib(this.options.maxBytes ?? 0)}`, { param: "model" });
  }
}
