/**
 * One servable model as the residency sees it: how to load it, whether it is loaded (or on its way in or out), how
 * many requests hold it, and when it goes. The residency (model-residency.ts) makes every decision; this only
 * records the state and describes it for /v1/models and `kiln ps`.
 */
import type { LoadedModel, ModelInfo } from "../backend.js";
import type { EngineError } from "../../errors/engine-error.js";
import type { Scheduler } from "../scheduler.js";

/** What the residency needs to know about a model before it ever loads. */
export interface ResidentSource {
  /** What /v1/models shows until the model has loaded once (id, aliases, backend, context). */
  info: ModelInfo;
  /** Bytes the memory budget counts for it until its first load measures them (its file). */
  estimatedBytes: number;
  /** Declared models load at start and never unload. */
  pinned: boolean;
  /** Loads it afresh. */
  load(): Promise<LoadedModel>;
}

/** A loaded model and the admission in front of it. */
export interface Loaded { model: LoadedModel; scheduler: Scheduler; bytes: number }

type State =
  | { kind: "unloaded" }
  | { kind: "loading"; done: Promise<void> }
  | { kind: "loaded"; loaded: Loaded }
  | { kind: "unloading"; done: Promise<void> };

export class Resident {
  state: State = { kind: "unloaded" };
  /** Requests holding the model: waiting for its load, queued on its scheduler or running. It never unloads under them. */
  users = 0;
  /** Requests waiting for its load (bounded by the queue). */
  waitingForLoad = 0;
  /** When its last request ended (or it loaded). */
  lastUsed = 0;
  /** The residency's count of uses when it was last used: least recently used first is lowest first. */
  useOrder = 0;
  /** How long it stays after its last request: ms, 0 at once, negative never. The latest request's keep_alive sets it. */
  keepAliveMs: number;
  /** When the idle timer unloads it; undefined while in use or when it stays. */
  unloadAt?: number;
  timer?: NodeJS.Timeout;
  /** A failed load, remembered so that requests until `until` fail at once instead of retrying it. */
  failure?: { error: EngineError; cause: EngineError; until: number };
  /** What the last load measured, kept for listing and the budget once unloaded. */
  private measured?: { info: ModelInfo; bytes: number };

  constructor(readonly source: ResidentSource, keepAliveMs: number) {
    this.keepAliveMs = keepAliveMs;
  }

  get id(): string { return this.info.id; }

  /** Whether a request's model name means this model. */
  answersTo(name: string): boolean {
    return this.info.id === name || this.info.aliases.includes(name);
  }

  get loaded(): Loaded | undefined {
    return this.state.kind === "loaded" ? this.state.loaded : undefined;
  }

  /** Bytes it takes while loaded: measured at its last load, else the estimate. */
  get bytes(): number {
    return this.loaded?.bytes ?? this.measured?.bytes ?? this.source.estimatedBytes;
  }

  /** Whether it holds (or is about to hold, or still holds) memory. */
  get occupies(): boolean {
    return this.state.kind !== "unloaded";
  }

  /** Whether the budget may unload it to make room: loaded, held by no request, not pinned. */
  get evictable(): boolean {
    return this.state.kind === "loaded" && this.users === 0 && !this.source.pinned;
  }

  /** Records a load's outcome. */
  loadedAs(loaded: Loaded): void {
    this.state = { kind: "loaded", loaded };
    this.measured = { info: loaded.model.info, bytes: loaded.bytes };
    this.failure = undefined;
  }

  /** Marks it used now; `order` ranks it among the others for least-recently-used eviction. */
  used(order: number): void {
    this.lastUsed = Date.now();
    this.useOrder = order;
  }

  stopTimer(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.unloadAt = undefined;
  }

  private get info(): ModelInfo {
    return this.loaded?.model.info ?? this.measured?.info ?? this.source.info;
  }

  /** Its ModelInfo with the residency facts in `details`: loaded, memory, requests, idle since, unloads at. */
  describe(): ModelInfo {
    const info = this.info;
    const loaded = this.loaded;
    const idle = loaded && this.users === 0;
    const stays = this.source.pinned || this.keepAliveMs < 0;
    const residency = {
      loaded: loaded !== undefined,
      ...(loaded ? { requests: this.users } : {}),
      // Models served elsewhere (remote) hold no memory here.
      ...(loaded && loaded.bytes > 0 ? { memory: loaded.bytes } : {}),
      ...(idle ? { idleSince: new Date(this.lastUsed).toISOString() } : {}),
      ...(idle ? { unloadsAt: stays ? "never" : this.unloadAt !== undefined ? new Date(this.unloadAt).toISOString() : "now" } : {}),
      ...(this.failure ? { loadError: this.failure.error.message } : {}),
    };
    return { ...info, details: { ...info.details, ...residency } };
  }
}
