/**
 * Replicas of one upstream model: least-outstanding-requests routing, a per-replica concurrency cap, an active
 * health check that takes failing replicas out and puts them back, and passive marking on connection failures.
 * Connection reuse comes from fetch's keep-alive pool.
 */
import type { ReplicaSpec } from "../../model-specs.js";
import { describeFetchError } from "./fetch-error.js";

export interface ReplicaState {
  url: string;
  healthy: boolean;
  outstanding: number;
  maxConcurrency: number;
  served: number;
  failures: number;
  lastError?: string;
  lastCheckedAt?: number;
}

export interface PoolOptions {
  maxConcurrency: number;
  healthIntervalMs: number;
  healthTimeoutMs: number;
}

class Replica {
  healthy = true;
  outstanding = 0;
  served = 0;
  failures = 0;
  lastError?: string;
  lastCheckedAt?: number;
  constructor(readonly spec: ReplicaSpec, readonly maxConcurrency: number) {}

  headers(): Record<string, string> {
    return { "content-type": "application/json", ...(this.spec.apiKey ? { authorization: `Bearer ${this.spec.apiKey}` } : {}) };
  }

  state(): ReplicaState {
    const { healthy, outstanding, maxConcurrency, served, failures, lastError, lastCheckedAt } = this;
    return { url: this.spec.url, healthy, outstanding, maxConcurrency, served, failures, lastError, lastCheckedAt };
  }
}

export type { Replica };

export class ReplicaPool {
  private readonly replicas: Replica[];
  private timer?: NodeJS.Timeout;
  private turn = 0;

  constructor(specs: ReplicaSpec[], private readonly options: PoolOptions) {
    this.replicas = specs.map((spec) => new Replica({ ...spec, url: spec.url.replace(/\/+$/, "") }, options.maxConcurrency));
  }

  /** Total concurrent requests the pool can carry. */
  get capacity(): number {
    return this.replicas.length * this.options.maxConcurrency;
  }

  get size(): number {
    return this.replicas.length;
  }

  /** Starts the periodic health check (the timer never keeps the process alive). */
  startHealthChecks(): void {
    this.timer ??= setInterval(() => void this.checkAll(), this.options.healthIntervalMs).unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /** The healthy replica with the fewest outstanding requests under its cap, skipping `exclude`; rotates ties. */
  pick(exclude: Set<Replica> = new Set()): Replica | undefined {
    const candidates = this.replicas.filter((r) => r.healthy && !exclude.has(r) && r.outstanding < r.maxConcurrency);
    if (candidates.length === 0) return undefined;
    const least = Math.min(...candidates.map((r) => r.outstanding));
    const tied = candidates.filter((r) => r.outstanding === least);
    return tied[this.turn++ % tied.length];
  }

  /** Marks a replica down after a failed connection; the health check brings it back. */
  markDown(replica: Replica, reason: string): void {
    replica.healthy = false;
    replica.failures++;
    replica.lastError = reason;
  }

  states(): ReplicaState[] {
    return this.replicas.map((r) => r.state());
  }

  /** Checks every replica now: `/health` at the server root when it answers 200, else `{url}/models`. */
  async checkAll(): Promise<void> {
    await Promise.all(this.replicas.map((replica) => this.check(replica)));
  }

  private async check(replica: Replica): Promise<void> {
    const root = replica.spec.url.replace(/\/v1$/, "");
    const ok = (await this.probe(replica, `${root}/health`)) || (await this.probe(replica, `${replica.spec.url}/models`));
    replica.lastCheckedAt = Date.now();
    if (ok) {
      replica.healthy = true;
      replica.lastError = undefined;
    } else if (replica.healthy) {
      this.markDown(replica, replica.lastError ?? "health check failed");
    }
  }

  private async probe(replica: Replica, url: string): Promise<boolean> {
    try {
      const response = await fetch(url, { headers: replica.headers(), signal: AbortSignal.timeout(this.options.healthTimeoutMs) });
      await response.body?.cancel();
      if (!response.ok) replica.lastError = `${url} answered ${response.status}`;
      return response.ok;
    } catch (error) {
      replica.lastError = `${url}: ${describeFetchError(error)}`;
      return false;
    }
  }
}
